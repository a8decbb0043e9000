"""``python -m suites.e2e.llamacpp_server [llama_cpp.server options]``: llama-cpp-python's
OpenAI-compatible server with the harness's workaround for this CPU (models load without
ggml's AMX extra buffers, which segfault here; see ``runtime_llamacpp.no_extra_buffers``).

``python -m suites.e2e.llamacpp_server --model "$(python -m engines.vocab.gguf small)"
--host 127.0.0.1 --port 8000 --n_threads 1 --chat_format llama-3``
"""

from __future__ import annotations


def main() -> None:
    from suites.e2e.runtime_llamacpp import no_extra_buffers

    with no_extra_buffers():  # the server loads its model inside main()
        from llama_cpp.server.__main__ import main as server_main

        server_main()


if __name__ == "__main__":
    main()
