"""ecjax's implementation, private: import from the public modules of ``ecjax`` (anything here may change without notice)."""
