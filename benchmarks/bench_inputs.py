"""The models and settings the sizing benchmarks share (bench_sizing.py and the side-by-side
workers), so every table times the same calls. Plain data: importable under any vllm_mem."""

GIB = 1 << 30

#: model -> (tensor_parallel_size, GPU for the plan): each on a deployment that serves it.
MODELS = {
    "meta-llama/Llama-3.1-8B-Instruct": (1, "H100-80GB"),
    "Qwen/Qwen3-30B-A3B": (1, "H100-80GB"),
    "google/gemma-3-27b-it": (2, "H100-80GB"),
    "deepseek-ai/DeepSeek-V3": (8, "H200"),
}
KV_AVAILABLE_BYTES = 20 * GIB
MAX_MODEL_LEN = 8192
#: Every setting whose default follows the vLLM release is given, so both sides plan the same.
PLAN_SETTINGS = dict(gpu_memory_utilization=0.92, max_model_len=MAX_MODEL_LEN, max_num_seqs=256,
                     max_num_batched_tokens=8192, cudagraph_memory_in_budget=True)
