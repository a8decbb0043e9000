"""End-to-end decoding: each engine's mask inside a real decode loop (``--suite e2e``).

``models``        model sizes by name (Llama shapes with the real 128,256-id Llama-3 LM head)
``runtime``       the small runtime interface (prefill, step → logits) and ``build_runtime``
``runtime_torch`` transformers ``LlamaForCausalLM`` with random weights (cpu / cuda)
``runtime_llamacpp`` llama-cpp-python on a random-weight GGUF the harness writes (``gguf_model``)
``sampling``      mask application (xgrammar's kernel or a shared fallback), temperature / top-p
``loop``          the decode loop, serial or overlapped, with per-step timings
``job``           the worker job kind ``e2e``; ``summary`` the per-engine e2e block of summary.json
"""
