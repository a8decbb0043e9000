"""Serving pieces more than one suite uses: an OpenAI-compatible client that asks for
constrained output and times the stream (:mod:`.openai_client`), the prompt every request
carries (:mod:`.prompt`), a random-weight Hugging Face model folder for a server to load
(:mod:`.vllm_offline`), servers the harness starts and stops by their PID
(:mod:`.launcher` and its :mod:`.guard`), and a canned server without a model for tests
and for the client's own cost (:mod:`.canned`)."""
