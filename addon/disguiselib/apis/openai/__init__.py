"""OpenAI's APIs: Chat, Responses, legacy Completions/Embeddings, Assistants, stored
objects, Realtime, batches and files; who serves them (OpenAI, Azure, compatible)."""
