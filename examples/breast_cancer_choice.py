"""Choosing among classifiers trained on a real dataset, under an uncertain cost matrix.

scikit-learn's breast-cancer data (569 tumours; here class 1 = malignant).  Three
classifiers give held-out posteriors by 5-fold cross-validation.  A missed malignant
tumour costs 5 to 50 times an unnecessary biopsy, and the deployment prevalence of
malignant tumours is 20 to 45 %.  Which classifier, and how sure are we?

Needs scikit-learn (in the test extra: pip install ".[test]").

    python examples/breast_cancer_choice.py
"""

import jax
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import ecjax
from ecjax import prob

x, y = load_breast_cancer(return_X_y=True)
labels = 1 - y  # scikit-learn codes malignant as 0; here 1 = malignant (the positive class)
models = {
    "logistic": make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)),
    "random-forest": RandomForestClassifier(n_estimators=200, random_state=0),
    "naive-bayes": GaussianNB(),
}
folds = StratifiedKFold(5, shuffle=True, random_state=0)
posteriors = np.stack([cross_val_predict(m, x, labels, cv=folds, method="predict_proba") for m in models.values()])
# Log-posteriors, clipped away from 0: a random forest outputs exact zeros, which no cost matrix can act on.
log_post = np.log(np.clip(posteriors, 1e-6, 1.0))
log_post -= np.logaddexp.reduce(log_post, axis=-1, keepdims=True)
names = list(models)

print("Accuracy of the argmax decisions:", {n: round(float(a), 3) for n, a in
      zip(names, ecjax.accuracy(ecjax.confusion_matrix(labels, log_post.argmax(-1)))) })

costs = prob.cost_ratio(5, 50)                           # c = [[0, 1], [r, 0]]: a miss costs r biopsies
priors = prob.interval_priors([0.55, 0.20], [0.80, 0.45])  # prevalence of malignancy 20-45 %
# Scores given: in every posterior draw each classifier makes the Bayes decisions of that draw's costs.
# The three systems saw the same tumours: a paired comparison.
result = prob.compare(prob.Systems(labels, scores=log_post, paired=True, names=names), costs=costs, priors=priors,
                      key=jax.random.key(0), rope=0.005, settings=prob.MonteCarloSettings(num_draws=20_000))
print(result.summary())
print("P(row better than column):")
for n, row in zip(names, np.asarray(result.pairwise)):
    print(f"  {n:14s} " + "  ".join(f"{p:.3f}" for p in row))
print("expected cost matrix (Dyrland et al. 2022, eq. 18):", np.round(-np.asarray(result.expected_utility_matrix), 2).tolist())
