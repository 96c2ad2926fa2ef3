"""Ask through the proxy with the official openai SDK: `base_url` points at mitmdump."""

import os
import sys

import openai

client = openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], max_retries=0)
stream = client.chat.completions.create(
    model="gpt-4.1", stream=True, messages=[{"role": "user", "content": sys.argv[1]}]
)
for chunk in stream:
    if chunk.choices and chunk.choices[0].delta.content:
        print(chunk.choices[0].delta.content, end="", flush=True)
print()
