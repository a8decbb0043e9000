"""End-to-end decoding: each engine's mask inside a real decode loop (``--suite e2e``).

``runtime``       the small runtime interface (prefill, step → logits); ``runtime_cache`` builds them
``runtime_torch`` a Llama decoder on ``LlamaForCausalLM``'s random weights: static KV cache,
                  a CUDA-graph-captured step per (batch, bucket) on cuda
``runtime_llamacpp`` llama-cpp-python on a random-weight GGUF the harness writes
                  (:mod:`harness.vocab.gguf`; model sizes by name in :mod:`harness.vocab.models`)
``sampling``      mask application (xgrammar's kernel or a shared fallback), temperature / top-p
``loop``          the decode loop, serial or overlapped (pipelined on CUDA), per-step timings
``protocol``      warm-up to a stable step, copy bandwidth (the floor), the SM clock
``maskbench``     the mask-apply microbenchmark of the suite
``job``           the worker job kind ``e2e``; ``summary`` the per-engine e2e block of summary.json
"""
