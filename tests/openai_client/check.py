"""`doppler serve` checked with the official `openai` Python client over loopback.

Usage: python check.py DOPPLER_BINARY MODEL.gguf
Starts the server as a child on a free 127.0.0.1 port, runs the checks, stops it.
"""

import concurrent.futures
import json
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import openai


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_up(base: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"doppler serve exited with {server.returncode}")
        try:
            urllib.request.urlopen(f"{base}/health", timeout=1)
            return
        except OSError:
            time.sleep(0.2)
    sys.exit("doppler serve did not come up in 60 s")


def raw_post(url: str, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def main() -> None:
    binary, model_file = sys.argv[1], sys.argv[2]
    model = pathlib.Path(model_file).stem
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([binary, "serve", "--model", model_file, "--port", str(port), "--ctx", "512"])
    try:
        wait_until_up(base, server)
        client = openai.OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)

        assert [m.id for m in client.models.list()] == [model]

        messages = [{"role": "user", "content": "Name a colour."}]
        plain = client.chat.completions.create(model=model, messages=messages, max_tokens=10, temperature=0)
        text = plain.choices[0].message.content
        assert plain.choices[0].finish_reason in ("stop", "length")
        assert plain.usage.total_tokens == plain.usage.prompt_tokens + plain.usage.completion_tokens

        chunks = list(client.chat.completions.create(
            model=model, messages=messages, max_tokens=10, temperature=0, stream=True,
            stream_options={"include_usage": True}))
        streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert streamed == text, (streamed, text)
        assert chunks[-1].usage.completion_tokens == plain.usage.completion_tokens

        completion = client.completions.create(model=model, prompt="Once upon a time", max_tokens=4, temperature=0)
        assert completion.object == "text_completion" and completion.usage.completion_tokens <= 4

        try:
            client.chat.completions.create(model="no-such-model", messages=messages, max_tokens=2)
            sys.exit("an unknown model was accepted")
        except openai.NotFoundError as error:
            assert error.body["code"] == "model_not_found", error.body
        try:
            client.chat.completions.create(model=model, messages=messages, max_tokens=-3)
            sys.exit("a negative max_tokens was accepted")
        except openai.BadRequestError as error:
            assert error.body["param"] == "max_tokens", error.body
        status, body = raw_post(f"{base}/v1/chat/completions", b'{"model": ')
        assert status == 400 and body["error"]["type"] == "invalid_request_error", (status, body)

        def stream_text(_: int) -> str:
            stream = client.chat.completions.create(
                model=model, messages=messages, max_tokens=6, temperature=0, stream=True)
            return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            first, second = pool.map(stream_text, range(2))
        assert first == second, (first, second)

        # Only loopback answers: the machine's own address is refused.
        own_address = socket.gethostbyname(socket.gethostname())
        if own_address != "127.0.0.1":
            try:
                socket.create_connection((own_address, port), timeout=1).close()
                sys.exit(f"the server answered on {own_address}")
            except OSError:
                pass
        print("openai client checks passed")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
