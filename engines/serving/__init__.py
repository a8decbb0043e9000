"""Serving engines through their real interfaces (the e2e suite's serving route).

``openai_client``  any OpenAI-compatible server, with per-server request dialects
``vllm_offline``   vLLM's offline ``LLM`` + ``SamplingParams(structured_outputs=...)``
                   (runs where vllm is installed; reported "not run" otherwise)
"""
