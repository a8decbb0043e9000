"""End-to-end decoding: each engine's mask inside a real decode loop (``--suite e2e``).

``runtime``       the small runtime interface (prefill, step → logits); ``runtime_cache`` builds them
``runtime_torch`` transformers ``LlamaForCausalLM`` with random weights (cpu / cuda)
``runtime_llamacpp`` llama-cpp-python on a random-weight GGUF the harness writes
                  (:mod:`harness.vocab.gguf`; model sizes by name in :mod:`harness.vocab.models`)
``sampling``      mask application (xgrammar's kernel or a shared fallback), temperature / top-p
``loop``          the decode loop, serial or overlapped, with per-step timings
``job``           the worker job kind ``e2e``; ``summary`` the per-engine e2e block of summary.json
"""
