"""Training the model with priors (``harness model build``, :mod:`harness.training.build`).

A stage of its own, above the suites' corpus reader and the ground truth it evaluates with:
:mod:`harness.model` (the checkpoint format, its prompt and split) stays below everything
that loads a checkpoint, and only this package, the configuration and the command line
build one."""
