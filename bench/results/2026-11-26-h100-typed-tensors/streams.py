"""Concurrent clients against `doppler serve`: N threads, each sending completions one after another,
all at once; reports generated tokens per second over the wall time and per-request latency.
Usage: python3 streams.py PORT N REQUESTS_PER_CLIENT MAX_TOKENS"""
import json, sys, threading, time, urllib.request

port, clients, per_client, max_tokens = (int(a) for a in sys.argv[1:5])
results, lock = [], threading.Lock()
with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models") as response:
    model = json.load(response)["data"][0]["id"]

def client(index):
    for r in range(per_client):
        body = json.dumps({"model": model, "prompt": f"Client {index} request {r}: the lighthouse keeper",
                           "max_tokens": max_tokens, "temperature": 0}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                         {"Content-Type": "application/json"})
        started = time.time()
        with urllib.request.urlopen(request, timeout=600) as response:
            usage = json.load(response)["usage"]
        with lock:
            results.append((time.time() - started, usage["completion_tokens"]))

started = time.time()
threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
for t in threads: t.start()
for t in threads: t.join()
wall = time.time() - started
latencies = sorted(l for l, _ in results)
tokens = sum(n for _, n in results)
print(json.dumps({"clients": clients, "requests": len(results), "tokens": tokens, "wall_s": round(wall, 2),
                  "tokens_per_s": round(tokens / wall, 1), "p50_s": round(latencies[len(latencies) // 2], 2),
                  "p99_s": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2)}))
