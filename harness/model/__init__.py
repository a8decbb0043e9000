"""Models with priors: the corpus split and prompt a model is trained and evaluated on
(:mod:`harness.model.data`), a local Hugging Face checkpoint given by path
(:mod:`harness.model.checkpoint`), its tokenizer (:mod:`harness.model.tokenizer`) and the
model the project trains here (:mod:`harness.training.build`, ``harness model build``).
Suites reach these through :mod:`harness.suite.model`."""
