"""Serving pieces more than one suite uses: the one OpenAI-compatible client, which asks for
constrained output, reads the event stream and times it, and makes every other request to a
server (:mod:`.openai_client`), the prompt every request carries (:mod:`.prompt`), a
random-weight Hugging Face model folder for a server to load (:mod:`.vllm_offline`), servers
the harness starts and stops by their PID (:mod:`.launcher` and its :mod:`.guard`), the
server of each engine row of a run, launched or given by URL (:mod:`.servers`), and a canned
server without a model for tests and for the client's own cost (:mod:`.canned`)."""
