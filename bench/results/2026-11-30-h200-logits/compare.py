"""The comparisons of README.md from the logits files that device-run.sh, device-run-attribution.sh,
hf_logits.py, hf_rounding.py and lavapipe.sh write: for each file, ‖a − b‖ / ‖b‖, the largest difference and the top token
against a reference run of the same shape. python3 compare.py > comparison.txt"""
import json
import math

PAIRS = [
    # (reference, runs): the H200's f32 kernels (no cooperative matrices) against its other paths.
    ("h200-f32", ["h200", "h200-no-flash", "h200-no-half", "h200-no-flash-no-half", "h200-f32-no-subgroups"]),
    # transformers f32 (eager attention, TF32 off) against itself with f16 rounding, and against DOPPLER.
    ("hf-eager", ["hf-weights-f16", "hf-inputs-f16", "h200-f32", "h200"]),
    ("hf", ["h200-f32", "h200"]),
    # lavapipe (f32 kernels, CPU) against the H200.
    ("lavapipe", ["h200-f32", "h200"]),
]
SHAPES = ["270m", "llama3.2-1b", "qwen2.5-1.5b"]


def load(name):
    try:
        return json.load(open(f"{name}.json"))["logits"]
    except FileNotFoundError:
        return None


def top(logits):
    return max(range(len(logits)), key=logits.__getitem__)


for reference, runs in PAIRS:
    for shape in SHAPES:
        base = load(f"{reference}-{shape}")
        if base is None:
            continue
        norm = math.sqrt(sum(y * y for y in base))
        spread = math.sqrt(sum(y * y for y in base) / len(base) - (sum(base) / len(base)) ** 2)
        print(f"{shape} against {reference} (logit standard deviation {spread:.2f}, top token {top(base)}):")
        for run in runs:
            other = load(f"{run}-{shape}")
            if other is None:
                continue
            diffs = [x - y for x, y in zip(other, base)]
            rel = math.sqrt(sum(d * d for d in diffs)) / norm
            print(f"  {run:24} relative {rel:.2e}  largest {max(map(abs, diffs)):.4f}  top token {top(other)}")
