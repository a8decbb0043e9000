"""Suites: each one folder, ``suites/<name>/`` (``-`` in the name is ``_`` in the folder),
holding everything of the suite: its cases and class (``__init__.py``, which names the
class ``SUITE``), its run options, its worker job, its summary block, its report section
and its README. Each suite class declares what the harness does with its cases
(:class:`harness.suite.SuiteBase`).

:mod:`harness.registry` finds the built-in suites by their folders without importing this
package, and loads third-party suites registered through the entry point group
``grammar_harness.suites`` beside them.
"""
