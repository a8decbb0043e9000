"""The serve suite's measurement: servers started and stopped by the harness
(:mod:`.launcher` and its :mod:`.guard`), request streams sent on schedule (:mod:`.load`),
a canned server for tests and the client's own cost (:mod:`.canned`), and the metrics
(:mod:`.metrics`). The executor that turns the suite's requests into records is
:mod:`harness.execution.serve`."""
