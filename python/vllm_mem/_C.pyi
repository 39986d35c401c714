"""
vllm_mem's C++ core. Use the typed wrappers in the vllm_mem package.
"""
from __future__ import annotations
import collections.abc
import typing
__all__: list[str] = ['ActivationBreakdown', 'ActivationConstants', 'AllocatorStats', 'AssignedDevice', 'AttentionKind', 'AvailableKvMemory', 'AvailableKvOptions', 'CudagraphConstants', 'CudagraphEstimate', 'DeviceCheck', 'DeviceMemoryInfo', 'DeviceReader', 'DraftWeights', 'KV_SUGGESTION_BUFFER_BYTES', 'KvCacheCapacity', 'KvCacheGroupInfo', 'KvCacheMemorySuggestion', 'KvCacheOptions', 'KvCacheSettings', 'LayerSpec', 'MemoryImbalance', 'MemorySampler', 'MlaSpec', 'MmEncoderBudget', 'MmProfileBreakdown', 'ModelSpec', 'MoeSpec', 'NonTorchBreakdown', 'NonTorchConstants', 'PlanInputs', 'PlanRequest', 'PlanSuggestion', 'ProfileMeasurements', 'ProfilingFigures', 'QuantizationSpec', 'RankLayout', 'RankPlan', 'RequestedMemory', 'ResidentStage', 'SAMPLER_MAX_INTERVAL_S', 'SAMPLER_MIN_INTERVAL_S', 'SamplerPeaks', 'SimulatedDevice', 'SimulatedDeviceState', 'SizingCache', 'SnapshotRecord', 'SpeculativeConfig', 'StageAssignment', 'StageCheckResult', 'StageConfig', 'StageConfigSet', 'StageDemand', 'StageLimit', 'StagePlanSummary', 'StartupBaselineConstants', 'StartupPlan', 'StartupPrediction', 'SweepAxes', 'UtilizationAssignment', 'VisionEncoderSpec', 'WorkerLayout', 'active_device_name', 'allowed_kv_cache_dtypes', 'apply_vllm_version_kv_rules', 'assign_utilizations', 'auto_fit_max_model_len', 'auto_fit_max_model_len_for', 'check_device', 'check_enough_kv_cache_memory', 'check_memory_imbalance', 'check_request_memory', 'check_speculative_config_keys', 'check_stages', 'check_stages_with_plans', 'close_gpu_matches', 'closest_setting_name', 'compute_memory_profiling', 'compute_mm_encoder_budget', 'compute_rank_layout', 'cuda_driver_status', 'cudagraph_profiling_line', 'current_device', 'current_torch_memory_usage', 'default_capture_sizes', 'derived_max_model_len', 'determine_available_kv_cache_memory', 'device_count', 'device_total_bytes', 'different_devices_message', 'draft_weights', 'empty_cache', 'estimate_max_model_len', 'estimate_max_model_len_for', 'estimate_non_torch_increase', 'estimated_cudagraph_line', 'evaluate_keywords', 'evaluate_plan', 'evaluate_request', 'failure_phase_names', 'format_gib', 'format_mib', 'format_thousands', 'format_utilization_ppm', 'gpu_catalog', 'host_memory', 'install_device', 'is_integrated', 'kv_cache_capacity', 'kv_cache_capacity_for', 'kv_cache_capacity_from_keywords', 'kv_cache_log_lines', 'kv_cache_memory_shortfall', 'kv_cache_memory_shortfall_for', 'kv_log_lines_for', 'kv_options_for_release', 'limits', 'long_max_model_len_error', 'lookup_gpu', 'lookup_vllm_version', 'max_shared_memory_per_block', 'measure_snapshot', 'measure_snapshot_fields', 'mem_get_info', 'memory_profiling_repr', 'normalize_gpu_name', 'normalize_speculative_method', 'num_parameters', 'nvml_memory', 'parse_cuda_device', 'parse_cuda_visible_devices', 'parse_stage_config', 'plan_settings', 'process_memory', 'python_float_repr', 'read_speculative_config_fields', 'release_device_memory_under_pressure', 'remove_device', 'reset_peak_memory_stats', 'resolve_batch_defaults', 'resolved_num_speculative_tokens', 'rule_of_thumb_activation_bytes', 'rule_of_thumb_kv_cache_bytes', 'rule_of_thumb_weight_bytes', 'run_sweep', 'served_dtype', 'spec_decode_capture_sizes', 'speculative_config_keys', 'speculative_unknown_keys_refused_since', 'stage_demand_for', 'subtract_snapshots', 'suggest_kv_cache_memory_bytes', 'suggest_plan_changes', 'supported_model_types', 'synchronize', 'torch_memory_stats', 'torch_provider_info', 'torch_stats', 'utilization_to_ppm', 'validate_setting', 'vllm_profile_settings', 'vllm_version_profiles', 'weight_breakdown', 'weight_bytes', 'weight_bytes_for']
class AttentionKind:
    """
    Members:
    
      FULL
    
      SLIDING_WINDOW
    
      MLA
    
      NONE
    """
    FULL: typing.ClassVar[AttentionKind]
    MLA: typing.ClassVar[AttentionKind]
    NONE: typing.ClassVar[AttentionKind]
    SLIDING_WINDOW: typing.ClassVar[AttentionKind]
    __members__: typing.ClassVar[dict[str, AttentionKind]]
    @typing.overload
    def __eq__(self, other: AttentionKind) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    def __getstate__(self) -> int:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __ne__(self, other: AttentionKind) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class LayerSpec:
    @property
    def attention(self) -> AttentionKind:
        ...
    @property
    def kv_shared(self) -> bool:
        ...
    @property
    def moe(self) -> bool:
        ...
    @property
    def sliding_window_tokens(self) -> int:
        ...
class MlaSpec:
    @property
    def index_head_dim(self) -> int:
        ...
    @property
    def index_n_heads(self) -> int:
        ...
    @property
    def index_topk(self) -> int:
        ...
    @property
    def kv_lora_rank(self) -> int:
        ...
    @property
    def q_lora_rank(self) -> int:
        ...
    @property
    def qk_nope_head_dim(self) -> int:
        ...
    @property
    def qk_rope_head_dim(self) -> int:
        ...
    @property
    def v_head_dim(self) -> int:
        ...
class MoeSpec:
    @property
    def expert_intermediate_size(self) -> int:
        ...
    @property
    def num_experts(self) -> int:
        ...
    @property
    def num_experts_per_token(self) -> int:
        ...
    @property
    def num_shared_experts(self) -> int:
        ...
    @property
    def shared_expert_intermediate_size(self) -> int:
        ...
class QuantizationSpec:
    @property
    def group_size(self) -> int:
        ...
    @property
    def method(self) -> str:
        ...
    @property
    def nvfp4(self) -> bool:
        ...
    @property
    def unquantized_modules(self) -> list[str]:
        ...
    @property
    def weight_bits(self) -> int:
        ...
    @property
    def zero_point(self) -> bool:
        ...
class VisionEncoderSpec:
    @property
    def config_class(self) -> str:
        ...
    @property
    def encoder(self) -> str:
        ...
    @property
    def hidden_size(self) -> int:
        ...
    @property
    def image_size(self) -> int:
        ...
    @property
    def intermediate_size(self) -> int:
        ...
    @property
    def loaded_layers(self) -> int:
        ...
    @property
    def num_heads(self) -> int:
        ...
    @property
    def num_layers(self) -> int:
        ...
    @property
    def num_parameters(self) -> int:
        ...
    @property
    def patch_size(self) -> int:
        ...
    @property
    def text_hidden_size(self) -> int:
        ...
class ModelSpec:
    @staticmethod
    def from_json(json_text: str, allow_unknown: bool = False) -> ModelSpec:
        """
        Parse the text of a Hugging Face config.json
        """
    @property
    def architectures(self) -> list[str]:
        ...
    @property
    def caveats(self) -> list[str]:
        ...
    @property
    def dtype(self) -> str:
        ...
    @property
    def generic_estimate_reason(self) -> str:
        ...
    @property
    def head_dim(self) -> int:
        ...
    @property
    def hidden_size(self) -> int:
        ...
    @property
    def intermediate_size(self) -> int:
        ...
    @property
    def layers(self) -> list[LayerSpec]:
        ...
    @property
    def max_position_embeddings(self) -> int:
        ...
    @property
    def mla(self) -> MlaSpec | None:
        ...
    @property
    def model_type(self) -> str:
        ...
    @property
    def moe(self) -> MoeSpec | None:
        ...
    @property
    def num_attention_heads(self) -> int:
        ...
    @property
    def num_kv_heads(self) -> int:
        ...
    @property
    def num_layers(self) -> int:
        ...
    @property
    def quantization(self) -> QuantizationSpec | None:
        ...
    @property
    def tie_word_embeddings(self) -> bool:
        ...
    @property
    def vision(self) -> VisionEncoderSpec | None:
        ...
    @property
    def vocab_size(self) -> int:
        ...
class KvCacheOptions:
    allow_chunked_local_with_hybrid: bool
    cap_sliding_window_at_full: bool
    disable_hybrid_kv_cache_manager: bool
    hybrid_align_to_user_block_size: bool
    kv_cache_dtype: str
    kv_tokens_from_concurrency: bool
    mamba_cache_dtype: str
    mamba_cache_mode: str
    mamba_conv_state_includes_spec_tokens: bool
    mamba_ssm_cache_dtype: str
    mamba_ssm_dtype_from_config: bool
    model_dtype: str
    def __init__(self) -> None:
        ...
    @property
    def block_size(self) -> int:
        ...
    @block_size.setter
    def block_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def decode_context_parallel_size(self) -> int:
        ...
    @decode_context_parallel_size.setter
    def decode_context_parallel_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def group_size_max_ratio(self) -> float:
        ...
    @group_size_max_ratio.setter
    def group_size_max_ratio(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def hybrid_kernel_block_alignment(self) -> int:
        ...
    @hybrid_kernel_block_alignment.setter
    def hybrid_kernel_block_alignment(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def mamba_block_size(self) -> int:
        ...
    @mamba_block_size.setter
    def mamba_block_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_concurrent_batches(self) -> int:
        ...
    @max_concurrent_batches.setter
    def max_concurrent_batches(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_model_len(self) -> int:
        ...
    @max_model_len.setter
    def max_model_len(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_num_batched_tokens(self) -> int:
        ...
    @max_num_batched_tokens.setter
    def max_num_batched_tokens(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def num_gpu_blocks_override(self) -> int:
        ...
    @num_gpu_blocks_override.setter
    def num_gpu_blocks_override(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def num_speculative_tokens(self) -> int:
        ...
    @num_speculative_tokens.setter
    def num_speculative_tokens(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def pipeline_parallel_size(self) -> int:
        ...
    @pipeline_parallel_size.setter
    def pipeline_parallel_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def tensor_parallel_size(self) -> int:
        ...
    @tensor_parallel_size.setter
    def tensor_parallel_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class KvCacheGroupInfo:
    @property
    def block_size(self) -> int:
        ...
    @property
    def blocks_per_request(self) -> int:
        ...
    @property
    def kind(self) -> str:
        ...
    @property
    def layer_indices(self) -> list[int]:
        ...
    @property
    def max_memory_per_request_bytes(self) -> int:
        ...
    @property
    def page_size_bytes(self) -> int:
        ...
    @property
    def sliding_window_tokens(self) -> int:
        ...
    @property
    def uniform_type(self) -> bool:
        ...
class KvCacheCapacity:
    @property
    def attention_block_size(self) -> int:
        ...
    @property
    def available_bytes(self) -> int:
        ...
    @property
    def block_size(self) -> int:
        ...
    @property
    def bytes_per_block(self) -> int:
        ...
    @property
    def bytes_per_request(self) -> int:
        ...
    @property
    def groups(self) -> list[KvCacheGroupInfo]:
        ...
    @property
    def hybrid_log_lines(self) -> list[str]:
        ...
    @property
    def kv_cache_bytes(self) -> int:
        ...
    @property
    def kv_cache_dtype(self) -> str:
        ...
    @property
    def mamba_padding_percent(self) -> float:
        ...
    @property
    def mamba_page_size_padded_bytes(self) -> int:
        ...
    @property
    def mamba_state_bytes(self) -> int:
        ...
    @property
    def max_concurrency(self) -> float:
        ...
    @property
    def max_model_len(self) -> int:
        ...
    @property
    def num_blocks(self) -> int:
        ...
    @property
    def num_blocks_per_worker(self) -> list[int]:
        ...
    @property
    def num_padding_layers(self) -> int:
        ...
    @property
    def num_tokens(self) -> int:
        ...
class SizingCache:
    """
    A ModelSpec's remembered KV layouts, KV options per request and weights (sizing_cache.h).
    """
    def __init__(self, spec: ModelSpec) -> None:
        ...
    @property
    def num_kv_layouts(self) -> int:
        ...
class SnapshotRecord:
    """
    One device reading (bytes, seconds).
    """
    integrated: bool
    torch_status: str
    def __init__(self) -> None:
        ...
    @property
    def cuda_free_memory(self) -> int:
        ...
    @cuda_free_memory.setter
    def cuda_free_memory(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def cuda_memory(self) -> int:
        ...
    @cuda_memory.setter
    def cuda_memory(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def device(self) -> int:
        ...
    @device.setter
    def device(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def free_memory(self) -> int:
        ...
    @free_memory.setter
    def free_memory(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def non_torch_memory(self) -> int:
        ...
    @non_torch_memory.setter
    def non_torch_memory(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def timestamp(self) -> float:
        ...
    @timestamp.setter
    def timestamp(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def torch_allocated(self) -> int:
        ...
    @torch_allocated.setter
    def torch_allocated(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def torch_memory(self) -> int:
        ...
    @torch_memory.setter
    def torch_memory(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def torch_peak(self) -> int:
        ...
    @torch_peak.setter
    def torch_peak(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def total_memory(self) -> int:
        ...
    @total_memory.setter
    def total_memory(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class AllocatorStats:
    """
    Torch caching-allocator aggregate figures.
    """
    @property
    def allocated_bytes(self) -> int:
        ...
    @property
    def allocated_peak_bytes(self) -> int:
        ...
    @property
    def available(self) -> bool:
        ...
    @property
    def detail(self) -> str:
        ...
    @property
    def reserved_bytes(self) -> int:
        ...
    @property
    def reserved_peak_bytes(self) -> int:
        ...
    @property
    def status(self) -> str:
        ...
class SamplerPeaks:
    """
    Maxima over all samples taken.
    """
    def __init__(self) -> None:
        ...
    @property
    def num_samples(self) -> int:
        ...
    @property
    def peak_cuda_memory(self) -> int:
        ...
    @property
    def peak_non_torch_memory(self) -> int:
        ...
    @property
    def peak_torch_allocated(self) -> int:
        ...
    @property
    def peak_torch_reserved(self) -> int:
        ...
class ProfilingFigures:
    """
    memory_profiling()'s numbers.
    """
    formula: str
    def __init__(self) -> None:
        ...
    @property
    def non_kv_cache_memory(self) -> int:
        ...
    @non_kv_cache_memory.setter
    def non_kv_cache_memory(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def non_kv_cache_memory_components(self) -> int:
        ...
    @non_kv_cache_memory_components.setter
    def non_kv_cache_memory_components(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def non_kv_cache_memory_total_consumed(self) -> int:
        ...
    @non_kv_cache_memory_total_consumed.setter
    def non_kv_cache_memory_total_consumed(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def non_torch_increase(self) -> int:
        ...
    @non_torch_increase.setter
    def non_torch_increase(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def non_torch_peak_increase(self) -> int:
        ...
    @non_torch_peak_increase.setter
    def non_torch_peak_increase(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def peak_cuda_memory(self) -> int:
        ...
    @peak_cuda_memory.setter
    def peak_cuda_memory(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def profile_time(self) -> float:
        ...
    @profile_time.setter
    def profile_time(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def torch_peak_increase(self) -> int:
        ...
    @torch_peak_increase.setter
    def torch_peak_increase(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def total_consumed(self) -> int:
        ...
    @total_consumed.setter
    def total_consumed(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def transient_peak_headroom(self) -> int:
        ...
    @transient_peak_headroom.setter
    def transient_peak_headroom(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def weights_memory(self) -> int:
        ...
    @weights_memory.setter
    def weights_memory(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class MemorySampler:
    """
    Background sampler of the active device.
    """
    def __init__(self, device: typing.SupportsInt | typing.SupportsIndex, interval_s: typing.SupportsFloat | typing.SupportsIndex, max_samples: typing.SupportsInt | typing.SupportsIndex = 2097152) -> None:
        ...
    def peaks(self) -> SamplerPeaks:
        ...
    def start(self) -> None:
        ...
    def stop(self) -> None:
        ...
    def timeline(self) -> dict[str, typing.Any]:
        ...
    @property
    def device(self) -> int:
        ...
    @property
    def dropped_samples(self) -> int:
        ...
    @property
    def error(self) -> str:
        ...
    @property
    def interval_s(self) -> float:
        ...
    @property
    def running(self) -> bool:
        ...
class DeviceReader:
    pass
class SimulatedDeviceState:
    @property
    def free_bytes(self) -> int:
        ...
    @property
    def integrated(self) -> bool:
        ...
    @property
    def non_torch_bytes(self) -> int:
        ...
    @property
    def other_process_bytes(self) -> int:
        ...
    @property
    def torch_allocated_bytes(self) -> int:
        ...
    @property
    def torch_allocated_peak_bytes(self) -> int:
        ...
    @property
    def torch_reserved_bytes(self) -> int:
        ...
    @property
    def torch_reserved_peak_bytes(self) -> int:
        ...
    @property
    def total_bytes(self) -> int:
        ...
class SimulatedDevice(DeviceReader):
    def __init__(self, num_devices: typing.SupportsInt | typing.SupportsIndex, total_bytes: typing.SupportsInt | typing.SupportsIndex, integrated: bool, host_total_bytes: typing.SupportsInt | typing.SupportsIndex, host_available_bytes: typing.SupportsInt | typing.SupportsIndex, max_shared_memory_per_block: typing.SupportsInt | typing.SupportsIndex, torch_initialized: bool) -> None:
        ...
    def add_non_torch_bytes(self, device: typing.SupportsInt | typing.SupportsIndex, delta_bytes: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def add_other_process_bytes(self, device: typing.SupportsInt | typing.SupportsIndex, delta_bytes: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def set_current_device(self, device: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def set_failure(self, message: str) -> None:
        ...
    def set_host_memory(self, total_bytes: typing.SupportsInt | typing.SupportsIndex, available_bytes: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def set_integrated(self, device: typing.SupportsInt | typing.SupportsIndex, integrated: bool) -> None:
        ...
    def set_torch_initialized(self, initialized: bool) -> None:
        ...
    def set_torch_status(self, status: str) -> None:
        ...
    def state(self, device: typing.SupportsInt | typing.SupportsIndex) -> SimulatedDeviceState:
        ...
    def torch_allocate(self, device: typing.SupportsInt | typing.SupportsIndex, bytes: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def torch_allocate_at_next_read(self, device: typing.SupportsInt | typing.SupportsIndex, bytes: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def torch_empty_cache(self) -> None:
        ...
    def torch_free(self, device: typing.SupportsInt | typing.SupportsIndex, bytes: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def torch_reset_peak(self, device: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def empty_cache_calls(self) -> int:
        ...
    @property
    def mem_info_calls(self) -> int:
        ...
    @property
    def reset_peak_calls(self) -> int:
        ...
class KvCacheSettings:
    """
    The KV-cache settings a user asks for (plan_request.h).
    """
    def __copy__(self) -> KvCacheSettings:
        ...
    def __deepcopy__(self, arg0: dict) -> KvCacheSettings:
        ...
    def __init__(self, **kwargs) -> None:
        """
        Keywords as the table names them (plan_settings()); each checked against its row.
        """
    def replace(self, **kwargs) -> KvCacheSettings:
        """
        A copy with the given keywords changed (loops reuse one request).
        """
    @property
    def block_size(self) -> int:
        """
        Tokens per KV-cache block
        """
    @block_size.setter
    def block_size(self, value: int | None) -> None:
        ...
    @property
    def cap_sliding_window_at_full(self) -> bool | None:
        """
        Cap a sliding-window group's need at full attention's
        """
    @cap_sliding_window_at_full.setter
    def cap_sliding_window_at_full(self, value: bool | None) -> None:
        ...
    @property
    def decode_context_parallel_size(self) -> int:
        """
        Ranks of each TP group the KV cache is sharded over along tokens
        """
    @decode_context_parallel_size.setter
    def decode_context_parallel_size(self, value: int) -> None:
        ...
    @property
    def disable_hybrid_kv_cache_manager(self) -> bool:
        """
        Size every layer for the full length
        """
    @disable_hybrid_kv_cache_manager.setter
    def disable_hybrid_kv_cache_manager(self, value: bool) -> None:
        ...
    @property
    def dtype(self) -> str:
        """
        Served model dtype (auto: the checkpoint's, float32 served as bfloat16)
        """
    @dtype.setter
    def dtype(self, value: str) -> None:
        ...
    @property
    def enable_prefix_caching(self) -> bool | None:
        """
        Prefix caching (a hybrid model then runs mamba_cache_mode align; before 0.28 as its class decides)
        """
    @enable_prefix_caching.setter
    def enable_prefix_caching(self, value: bool | None) -> None:
        ...
    @property
    def kv_cache_dtype(self) -> str:
        """
        KV storage dtype (auto follows the served model dtype)
        """
    @kv_cache_dtype.setter
    def kv_cache_dtype(self, value: str) -> None:
        ...
    @property
    def kv_cache_dtype_skip_layers(self) -> list[str]:
        """
        Layers whose KV cache stays in the model dtype beside a quantized one (indices, sliding_window)
        """
    @kv_cache_dtype_skip_layers.setter
    def kv_cache_dtype_skip_layers(self, value: list[str] | tuple[str, ...] | None) -> None:
        ...
    @property
    def mamba_cache_dtype(self) -> str:
        """
        Hybrid models: the conv state's dtype
        """
    @mamba_cache_dtype.setter
    def mamba_cache_dtype(self, value: str) -> None:
        ...
    @property
    def mamba_cache_mode(self) -> str:
        """
        Hybrid models: one state per request (none), per aligned block (align) or per block (all)
        """
    @mamba_cache_mode.setter
    def mamba_cache_mode(self, value: str) -> None:
        ...
    @property
    def mamba_ssm_cache_dtype(self) -> str:
        """
        Hybrid models: the SSM state's dtype
        """
    @mamba_ssm_cache_dtype.setter
    def mamba_ssm_cache_dtype(self, value: str) -> None:
        ...
    @property
    def max_concurrent_batches(self) -> int:
        """
        Batches in flight (sliding-window reservations grow with it)
        """
    @max_concurrent_batches.setter
    def max_concurrent_batches(self, value: int) -> None:
        ...
    @property
    def max_model_len(self) -> int:
        """
        Longest request (prompt + output) in tokens; auto (-1): vLLM's auto-fit (from 0.14)
        """
    @max_model_len.setter
    def max_model_len(self, value: int | str | None) -> None:
        ...
    @property
    def max_num_batched_tokens(self) -> int:
        """
        Tokens per scheduler step (sizes sliding-window reservations and the profile run)
        """
    @max_num_batched_tokens.setter
    def max_num_batched_tokens(self, value: int | None) -> None:
        ...
    @property
    def num_gpu_blocks_override(self) -> int:
        """
        Use this many KV blocks instead of what fits
        """
    @num_gpu_blocks_override.setter
    def num_gpu_blocks_override(self, value: int | None) -> None:
        ...
    @property
    def pipeline_parallel_size(self) -> int:
        """
        Pipeline-parallel stages
        """
    @pipeline_parallel_size.setter
    def pipeline_parallel_size(self, value: int) -> None:
        ...
    @property
    def tensor_parallel_size(self) -> int:
        """
        Tensor-parallel GPUs
        """
    @tensor_parallel_size.setter
    def tensor_parallel_size(self, value: int) -> None:
        ...
    @property
    def vllm_version(self) -> str:
        """
        The vLLM release whose rules apply
        """
    @vllm_version.setter
    def vllm_version(self, value: str | None) -> None:
        ...
class PlanRequest(KvCacheSettings):
    """
    Everything a user asks of a plan (plan_request.h).
    """
    def __copy__(self) -> PlanRequest:
        ...
    def __deepcopy__(self, arg0: dict) -> PlanRequest:
        ...
    def __init__(self, **kwargs) -> None:
        """
        Keywords as the table names them (plan_settings()); each checked against its row.
        """
    def replace(self, **kwargs) -> PlanRequest:
        """
        A copy with the given keywords changed (loops reuse one request).
        """
    @property
    def cpu_offload_gb(self) -> float:
        """
        GiB of weights per GPU kept in CPU memory (whole parameters, first layers first)
        """
    @cpu_offload_gb.setter
    def cpu_offload_gb(self, value: float) -> None:
        ...
    @property
    def cudagraph_capture_sizes(self) -> list[int]:
        """
        Batch sizes captured as CUDA graphs
        """
    @cudagraph_capture_sizes.setter
    def cudagraph_capture_sizes(self, value: list[int] | tuple[int, ...] | None) -> None:
        ...
    @property
    def cudagraph_memory_in_budget(self) -> bool | None:
        """
        VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: subtract the graph estimate from the KV budget
        """
    @cudagraph_memory_in_budget.setter
    def cudagraph_memory_in_budget(self, value: bool | None) -> None:
        ...
    @property
    def cudagraph_mode(self) -> str:
        """
        Which CUDA graphs are captured (compilation config)
        """
    @cudagraph_mode.setter
    def cudagraph_mode(self, value: str) -> None:
        ...
    @property
    def enable_lora(self) -> bool:
        """
        LoRA adapters: vLLM's adapter slots in every wrapped layer and the LoRA profile run
        """
    @enable_lora.setter
    def enable_lora(self, value: bool) -> None:
        ...
    @property
    def enforce_eager(self) -> bool:
        """
        No CUDA graphs
        """
    @enforce_eager.setter
    def enforce_eager(self, value: bool) -> None:
        ...
    @property
    def free_memory_bytes(self) -> int:
        """
        Free device memory at start-up in bytes
        """
    @free_memory_bytes.setter
    def free_memory_bytes(self, value: int | None) -> None:
        ...
    @property
    def fully_sharded_loras(self) -> bool:
        """
        Shard both LoRA matrices over tensor parallelism (smaller slots at TP > 1)
        """
    @fully_sharded_loras.setter
    def fully_sharded_loras(self, value: bool) -> None:
        ...
    @property
    def gpu_count(self) -> int:
        """
        GPUs available (TP x PP may not exceed it)
        """
    @gpu_count.setter
    def gpu_count(self, value: int | None) -> None:
        ...
    @property
    def gpu_memory_utilization(self) -> float:
        """
        Fraction of the GPU vLLM may use
        """
    @gpu_memory_utilization.setter
    def gpu_memory_utilization(self, value: float | None) -> None:
        ...
    @property
    def kv_cache_memory_bytes(self) -> int:
        """
        KV-cache bytes per GPU instead of profiling
        """
    @kv_cache_memory_bytes.setter
    def kv_cache_memory_bytes(self, value: int | None) -> None:
        ...
    @property
    def language_model_only(self) -> bool:
        """
        Multimodal models: every modality limited to 0 (no encoder profile run)
        """
    @language_model_only.setter
    def language_model_only(self, value: bool) -> None:
        ...
    @property
    def limit_mm_per_prompt(self) -> int | dict[str, typing.Any] | None:
        """
        Multimodal models: items per prompt by modality ({"image": 2, "video": 0}, or {"image": {"count": 1, "width": 512, "height": 512}}); an int N: N images, other modalities off
        """
    @limit_mm_per_prompt.setter
    def limit_mm_per_prompt(self, value: int | dict[str, typing.Any] | str | None) -> None:
        ...
    @property
    def lora_dtype(self) -> str:
        """
        The adapter slots' dtype (auto: the served dtype)
        """
    @lora_dtype.setter
    def lora_dtype(self, value: str) -> None:
        ...
    @property
    def max_cpu_loras(self) -> int:
        """
        LoRA adapters cached in host memory (no GPU memory; accepted so a command line plans)
        """
    @max_cpu_loras.setter
    def max_cpu_loras(self, value: int | None) -> None:
        ...
    @property
    def max_cudagraph_capture_size(self) -> int:
        """
        Largest CUDA-graph batch size
        """
    @max_cudagraph_capture_size.setter
    def max_cudagraph_capture_size(self, value: int | None) -> None:
        ...
    @property
    def max_lora_rank(self) -> int:
        """
        Largest adapter rank: every slot is this wide
        """
    @max_lora_rank.setter
    def max_lora_rank(self, value: int) -> None:
        ...
    @property
    def max_loras(self) -> int:
        """
        LoRA adapters on the GPU at once: one slot each in every wrapped layer
        """
    @max_loras.setter
    def max_loras(self, value: int) -> None:
        ...
    @property
    def max_num_seqs(self) -> int:
        """
        Sequences per scheduler step
        """
    @max_num_seqs.setter
    def max_num_seqs(self, value: int | None) -> None:
        ...
    @property
    def mm_processor_cache_gb(self) -> float:
        """
        Multimodal processor cache in host memory (GiB; no GPU memory, accepted so a command line plans)
        """
    @mm_processor_cache_gb.setter
    def mm_processor_cache_gb(self, value: float) -> None:
        ...
    @property
    def mm_processor_kwargs(self) -> dict[str, typing.Any] | None:
        """
        Multimodal models: processor overrides; max_pixels / min_pixels (or size) bound the Qwen-VL dummy image
        """
    @mm_processor_kwargs.setter
    def mm_processor_kwargs(self, value: dict[str, typing.Any] | str | None) -> None:
        ...
    @property
    def quantization(self) -> str:
        """
        Weight quantization method
        """
    @quantization.setter
    def quantization(self, value: str | None) -> None:
        ...
    @property
    def skip_mm_profiling(self) -> bool:
        """
        Multimodal models: skip the encoder's profile run (its memory is then not reserved)
        """
    @skip_mm_profiling.setter
    def skip_mm_profiling(self, value: bool) -> None:
        ...
    @property
    def total_memory_bytes(self) -> int:
        """
        The device's total memory in bytes
        """
    @total_memory_bytes.setter
    def total_memory_bytes(self, value: int | None) -> None:
        ...
    @property
    def usage_context(self) -> str:
        """
        server (vllm serve) or offline (the LLM class)
        """
    @usage_context.setter
    def usage_context(self, value: str) -> None:
        ...
class PlanInputs(PlanRequest):
    activation_constants: ...
    allow_long_max_model_len: bool
    baseline_constants: ...
    cudagraph_constants: ...
    gpu_name: str
    non_torch_constants: ...
    speculative: ... | None
    total_memory_source: str
    vllm_engine: str
    vllm_version_source: str
    @typing.overload
    def __init__(self) -> None:
        ...
    @typing.overload
    def __init__(self, request: PlanRequest) -> None:
        ...
    @property
    def checkpoint_weights_bytes(self) -> int:
        ...
    @checkpoint_weights_bytes.setter
    def checkpoint_weights_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def dtype_note(self) -> str:
        ...
    @property
    def hybrid_kv_cache_manager(self) -> bool:
        ...
    @property
    def kv_log_format(self) -> int:
        ...
    @property
    def lora_note(self) -> str:
        ...
    @property
    def max_model_len_auto(self) -> bool:
        ...
    @property
    def model_runner(self) -> str:
        ...
    @property
    def model_runner_note(self) -> str:
        ...
    @property
    def resolved_vllm_version(self) -> str:
        ...
    @property
    def sampler_bytes_per_logit(self) -> float:
        ...
    @sampler_bytes_per_logit.setter
    def sampler_bytes_per_logit(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def sampler_programs_note(self) -> str:
        ...
    @property
    def vllm_version_note(self) -> str:
        ...
class RequestedMemory:
    @property
    def error_message(self) -> str:
        ...
    @property
    def fits(self) -> bool:
        ...
    @property
    def largest_fitting_utilization_ppm(self) -> int:
        ...
    @property
    def requested_bytes(self) -> int:
        ...
class ProfileMeasurements:
    def __init__(self) -> None:
        ...
    @property
    def cudagraph_estimate_bytes(self) -> int:
        ...
    @cudagraph_estimate_bytes.setter
    def cudagraph_estimate_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def non_kv_cache_bytes(self) -> int | None:
        ...
    @non_kv_cache_bytes.setter
    def non_kv_cache_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex | None) -> None:
        ...
    @property
    def non_torch_increase_bytes(self) -> int:
        ...
    @non_torch_increase_bytes.setter
    def non_torch_increase_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def torch_peak_increase_bytes(self) -> int:
        ...
    @torch_peak_increase_bytes.setter
    def torch_peak_increase_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def weights_bytes(self) -> int:
        ...
    @weights_bytes.setter
    def weights_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class AvailableKvOptions:
    estimate_cudagraphs: bool
    def __init__(self) -> None:
        ...
    @property
    def gpu_memory_utilization(self) -> float:
        ...
    @gpu_memory_utilization.setter
    def gpu_memory_utilization(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def init_free_memory_bytes(self) -> int:
        ...
    @init_free_memory_bytes.setter
    def init_free_memory_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def kv_cache_memory_bytes(self) -> int:
        ...
    @kv_cache_memory_bytes.setter
    def kv_cache_memory_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def total_memory_bytes(self) -> int:
        ...
    @total_memory_bytes.setter
    def total_memory_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class AvailableKvMemory:
    @property
    def available_kv_cache_bytes(self) -> int:
        ...
    @property
    def available_line(self) -> str:
        ...
    @property
    def cudagraph_applied_bytes(self) -> int:
        ...
    @property
    def cudagraph_line(self) -> str:
        ...
    @property
    def from_kv_cache_memory_bytes(self) -> bool:
        ...
    @property
    def kv_cache_memory_bytes_line(self) -> str:
        ...
    @property
    def non_kv_cache_bytes(self) -> int:
        ...
    @property
    def requested_bytes(self) -> int:
        ...
class KvCacheMemorySuggestion:
    @property
    def line(self) -> str:
        ...
    @property
    def to_gpu_limit_bytes(self) -> int:
        ...
    @property
    def to_requested_limit_bytes(self) -> int:
        ...
class ActivationConstants:
    def __init__(self) -> None:
        ...
    @property
    def fused_moe_chunk_tokens(self) -> int:
        ...
    @fused_moe_chunk_tokens.setter
    def fused_moe_chunk_tokens(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def hidden_tensors(self) -> float:
        ...
    @hidden_tensors.setter
    def hidden_tensors(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def sampler_bytes_per_logit(self) -> float:
        ...
    @sampler_bytes_per_logit.setter
    def sampler_bytes_per_logit(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def sampler_fixed_bytes(self) -> int:
        ...
    @sampler_fixed_bytes.setter
    def sampler_fixed_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def sampler_kernel_programs(self) -> int:
        ...
    @sampler_kernel_programs.setter
    def sampler_kernel_programs(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class NonTorchConstants:
    def __init__(self) -> None:
        ...
    @property
    def multi_process_bytes(self) -> int:
        ...
    @multi_process_bytes.setter
    def multi_process_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def per_tensor_parallel_peer_bytes(self) -> int:
        ...
    @per_tensor_parallel_peer_bytes.setter
    def per_tensor_parallel_peer_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def single_process_bytes(self) -> int:
        ...
    @single_process_bytes.setter
    def single_process_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def tensor_parallel_nccl_bytes(self) -> int:
        ...
    @tensor_parallel_nccl_bytes.setter
    def tensor_parallel_nccl_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class CudagraphConstants:
    def __init__(self) -> None:
        ...
    @property
    def bytes_per_graph_node(self) -> float:
        ...
    @bytes_per_graph_node.setter
    def bytes_per_graph_node(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def first_capture_fixed_bytes(self) -> int:
        ...
    @first_capture_fixed_bytes.setter
    def first_capture_fixed_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def per_graph_bytes_per_layer_hidden(self) -> float:
        ...
    @per_graph_bytes_per_layer_hidden.setter
    def per_graph_bytes_per_layer_hidden(self, arg0: typing.SupportsFloat | typing.SupportsIndex) -> None:
        ...
    @property
    def per_graph_floor_bytes(self) -> int:
        ...
    @per_graph_floor_bytes.setter
    def per_graph_floor_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class StartupBaselineConstants:
    def __init__(self) -> None:
        ...
    @property
    def multi_process_bytes(self) -> int:
        ...
    @multi_process_bytes.setter
    def multi_process_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def single_process_bytes(self) -> int:
        ...
    @single_process_bytes.setter
    def single_process_bytes(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class MmEncoderBudget:
    @property
    def encoder_budget_tokens(self) -> int:
        ...
    @property
    def encoder_cache_size_tokens(self) -> int:
        ...
    @property
    def encoder_compute_budget_tokens(self) -> int:
        ...
    @property
    def max_items_per_batch(self) -> int:
        ...
    @property
    def max_items_per_prompt(self) -> int:
        ...
class MmProfileBreakdown:
    @property
    def attention_mask_bytes(self) -> int:
        ...
    @property
    def budget(self) -> MmEncoderBudget:
        ...
    @property
    def encoder_layer_bytes(self) -> int:
        ...
    @property
    def encoder_output_bytes(self) -> int:
        ...
    @property
    def encoder_phase_bytes(self) -> int:
        ...
    @property
    def items(self) -> int:
        ...
    @property
    def modelled(self) -> bool:
        ...
    @property
    def pixel_bytes(self) -> int:
        ...
    @property
    def resident_bytes(self) -> int:
        ...
    @property
    def runs(self) -> bool:
        ...
    @property
    def modality(self) -> str:
        ...
    @property
    def no_effect_kwargs(self) -> list[str]:
        ...
    @property
    def video_frames(self) -> int:
        ...

class ActivationBreakdown:
    @property
    def attention_bytes(self) -> int:
        ...
    @property
    def drafter_phase_bytes(self) -> int:
        ...
    @property
    def forward_bytes(self) -> int:
        ...
    @property
    def hidden_states_bytes(self) -> int:
        ...
    @property
    def logits_bytes(self) -> int:
        ...
    @property
    def lora_bytes(self) -> int:
        ...
    @property
    def mlp_intermediate_bytes(self) -> int:
        ...
    @property
    def moe_workspace_bytes(self) -> int:
        ...
    @property
    def multimodal(self) -> MmProfileBreakdown:
        ...
    @property
    def peak_bytes(self) -> int:
        ...
    @property
    def pipeline_buffers_bytes(self) -> int:
        ...
    @property
    def rejection_logits_bytes(self) -> int:
        ...
    @property
    def sampler_bytes(self) -> int:
        ...
    @property
    def sampler_dominates(self) -> bool:
        ...
    @property
    def sampler_kernel_buffer_bytes(self) -> int:
        ...
    @property
    def sampler_phase_bytes(self) -> int:
        ...
    @property
    def shared_workspace_reserved_bytes(self) -> int:
        ...
    @property
    def sparse_indexer_transient_bytes(self) -> int:
        ...
    @property
    def sparse_indexer_workspace_bytes(self) -> int:
        ...
class NonTorchBreakdown:
    @property
    def cuda_runtime_bytes(self) -> int:
        ...
    @property
    def nccl_bytes(self) -> int:
        ...
    @property
    def total_bytes(self) -> int:
        ...
class CudagraphEstimate:
    @property
    def capture_sizes(self) -> list[int]:
        ...
    @property
    def first_capture_bytes(self) -> int:
        ...
    @property
    def graph_nodes_per_rank(self) -> int:
        ...
    @property
    def largest_full(self) -> int:
        ...
    @property
    def largest_piecewise(self) -> int:
        ...
    @property
    def num_full_graphs(self) -> int:
        ...
    @property
    def num_piecewise_graphs(self) -> int:
        ...
    @property
    def per_graph_bytes(self) -> int:
        ...
    @property
    def profiling_line(self) -> str:
        ...
    @property
    def total_bytes(self) -> int:
        ...
class SpeculativeConfig:
    draft: ModelSpec | None
    draft_name: str
    eagle_embed_tokens_shared: bool
    eagle_lm_head_shared: bool | None
    method: str
    quantization: str
    def __init__(self) -> None:
        ...
    @property
    def draft_target_hidden_size(self) -> int:
        ...
    @draft_target_hidden_size.setter
    def draft_target_hidden_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def draft_tensor_parallel_size(self) -> int:
        ...
    @draft_tensor_parallel_size.setter
    def draft_tensor_parallel_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def draft_vocab_size(self) -> int:
        ...
    @draft_vocab_size.setter
    def draft_vocab_size(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def max_model_len(self) -> int:
        ...
    @max_model_len.setter
    def max_model_len(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def n_predict(self) -> int:
        ...
    @n_predict.setter
    def n_predict(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def no_effect_keys(self) -> list[str]:
        ...
    @no_effect_keys.setter
    def no_effect_keys(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def num_speculative_tokens(self) -> int:
        ...
    @num_speculative_tokens.setter
    def num_speculative_tokens(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def target_num_mtp_layers(self) -> int:
        ...
    @target_num_mtp_layers.setter
    def target_num_mtp_layers(self, arg0: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
class DraftWeights:
    @property
    def embedding_bytes(self) -> int:
        ...
    @property
    def embedding_shared(self) -> bool:
        ...
    @property
    def extra_bytes(self) -> int:
        ...
    @property
    def layers_bytes(self) -> int:
        ...
    @property
    def lm_head_bytes(self) -> int:
        ...
    @property
    def lm_head_shared(self) -> bool:
        ...
    @property
    def num_parameters(self) -> int:
        ...
    @property
    def total_bytes(self) -> int:
        ...
class RankPlan:
    @property
    def activation(self) -> ActivationBreakdown:
        ...
    @property
    def activation_peak_bytes(self) -> int:
        ...
    @property
    def available_kv_cache_bytes(self) -> int:
        ...
    @property
    def cudagraph(self) -> CudagraphEstimate:
        ...
    @property
    def cudagraph_applied_bytes(self) -> int:
        ...
    @property
    def cudagraph_bytes(self) -> int:
        ...
    @property
    def draft_kv_bytes_per_block(self) -> int:
        ...
    @property
    def draft_kv_cache_bytes(self) -> int:
        ...
    @property
    def draft_weights_bytes(self) -> int:
        ...
    @property
    def end_layer(self) -> int:
        ...
    @property
    def first_layer(self) -> int:
        ...
    @property
    def kv_bytes_per_block(self) -> int:
        ...
    @property
    def kv_bytes_per_request(self) -> int:
        ...
    @property
    def lora_slots_bytes(self) -> int:
        ...
    @property
    def non_kv_cache_bytes(self) -> int:
        ...
    @property
    def non_torch(self) -> NonTorchBreakdown:
        ...
    @property
    def non_torch_bytes(self) -> int:
        ...
    @property
    def num_blocks(self) -> int:
        ...
    @property
    def pp_rank(self) -> int:
        ...
    @property
    def vision_encoder_bytes(self) -> int:
        ...
    @property
    def weights_bytes(self) -> int:
        ...
class StartupPlan:
    @property
    def activation_peak_bytes(self) -> int:
        ...
    @property
    def auto_fit_from_max_model_len(self) -> int:
        ...
    @property
    def auto_fit_limiting_bytes(self) -> int:
        ...
    @property
    def auto_fit_line(self) -> str:
        ...
    @property
    def available_kv_cache_bytes(self) -> int:
        ...
    @property
    def available_kv_line(self) -> str:
        ...
    @property
    def cudagraph_bytes(self) -> int:
        ...
    @property
    def cudagraph_line(self) -> str:
        ...
    @property
    def failure_message(self) -> str:
        ...
    @property
    def failure_phase(self) -> str:
        ...
    @property
    def fits(self) -> bool:
        ...
    @property
    def free_memory_assumed(self) -> bool:
        ...
    @property
    def inputs(self) -> PlanInputs:
        ...
    @property
    def kv_block_size(self) -> int:
        ...
    @property
    def kv_cache(self) -> KvCacheCapacity | None:
        ...
    @property
    def kv_cache_memory_suggestion(self) -> KvCacheMemorySuggestion:
        ...
    @property
    def kv_cache_memory_suggestion_fits(self) -> bool:
        ...
    @property
    def kv_log_lines(self) -> list[str]:
        ...
    @property
    def max_model_len_that_fits(self) -> int:
        ...
    @property
    def model_max_model_len(self) -> int:
        ...
    @property
    def non_kv_cache_bytes(self) -> int:
        ...
    @property
    def non_torch_bytes(self) -> int:
        ...
    @property
    def ranks(self) -> list[RankPlan]:
        ...
    @property
    def request(self) -> PlanRequest:
        ...
    @property
    def request_memory_error(self) -> str:
        ...
    @property
    def requested_bytes(self) -> int:
        ...
    @property
    def shortfall_bytes(self) -> int:
        ...
    @property
    def tightest_pp_rank(self) -> int:
        ...
    @property
    def weights_bytes(self) -> int:
        ...
class PlanSuggestion:
    @property
    def bytes_freed(self) -> int:
        ...
    @property
    def direction(self) -> str:
        ...
    @property
    def fits_after(self) -> bool:
        ...
    @property
    def lever(self) -> str:
        ...
    @property
    def reason(self) -> str:
        ...
    @property
    def setting(self) -> str:
        ...
    @property
    def value(self) -> str:
        ...
class SweepAxes:
    base: PlanInputs
    def __init__(self) -> None:
        ...
    @property
    def block_size(self) -> list[int]:
        ...
    @block_size.setter
    def block_size(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def dtype(self) -> list[str]:
        ...
    @dtype.setter
    def dtype(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def enforce_eager(self) -> list[int]:
        ...
    @enforce_eager.setter
    def enforce_eager(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def gpu_memory_utilization(self) -> list[float]:
        ...
    @gpu_memory_utilization.setter
    def gpu_memory_utilization(self, arg0: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex]) -> None:
        ...
    @property
    def gpu_names(self) -> list[str]:
        ...
    @gpu_names.setter
    def gpu_names(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def kv_cache_dtype(self) -> list[str]:
        ...
    @kv_cache_dtype.setter
    def kv_cache_dtype(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def max_model_len(self) -> list[int]:
        ...
    @max_model_len.setter
    def max_model_len(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def max_num_batched_tokens(self) -> list[int]:
        ...
    @max_num_batched_tokens.setter
    def max_num_batched_tokens(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def max_num_seqs(self) -> list[int]:
        ...
    @max_num_seqs.setter
    def max_num_seqs(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def pipeline_parallel_size(self) -> list[int]:
        ...
    @pipeline_parallel_size.setter
    def pipeline_parallel_size(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def quantization(self) -> list[str]:
        ...
    @quantization.setter
    def quantization(self, arg0: collections.abc.Sequence[str]) -> None:
        ...
    @property
    def tensor_parallel_size(self) -> list[int]:
        ...
    @tensor_parallel_size.setter
    def tensor_parallel_size(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
    @property
    def total_memory_bytes(self) -> list[int]:
        ...
    @total_memory_bytes.setter
    def total_memory_bytes(self, arg0: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> None:
        ...
class StageConfig:
    """
    One vLLM-Omni stage, resolved.
    """
    @property
    def devices_defaulted(self) -> bool:
        ...
    @property
    def devices_text(self) -> str:
        ...
    @property
    def enforce_eager(self) -> bool:
        ...
    @property
    def gpu_memory_utilization(self) -> float:
        ...
    @property
    def list_index(self) -> int:
        ...
    @property
    def logical_devices(self) -> list[int]:
        ...
    @property
    def max_batch_size(self) -> int:
        ...
    @property
    def max_model_len(self) -> int:
        ...
    @property
    def max_num_batched_tokens(self) -> int:
        ...
    @property
    def max_num_seqs(self) -> int:
        ...
    @property
    def model(self) -> str:
        ...
    @property
    def model_arch(self) -> str:
        ...
    @property
    def model_stage(self) -> str:
        ...
    @property
    def on_cpu(self) -> bool:
        ...
    @property
    def physical_devices(self) -> list[int]:
        ...
    @property
    def pipeline_parallel_size(self) -> int:
        ...
    @property
    def resident_devices(self) -> list[int]:
        ...
    @property
    def source(self) -> str:
        ...
    @property
    def stage_id(self) -> int:
        ...
    @property
    def tensor_parallel_size(self) -> int:
        ...
    @property
    def utilization_defaulted(self) -> bool:
        ...
    @property
    def utilization_field(self) -> str:
        ...
    @property
    def utilization_ppm(self) -> int:
        ...
    @property
    def utilization_text(self) -> str:
        ...
class StageConfigSet:
    """
    A parsed vLLM-Omni stage config.
    """
    @property
    def cuda_visible_devices(self) -> list[int]:
        ...
    @property
    def format(self) -> str:
        ...
    @property
    def notes(self) -> list[str]:
        ...
    @property
    def stages(self) -> list[StageConfig]:
        ...
class DeviceMemoryInfo:
    def __init__(self, physical_id: typing.SupportsInt | typing.SupportsIndex, name: str = '', total_bytes: typing.SupportsInt | typing.SupportsIndex = 0, free_bytes: typing.SupportsInt | typing.SupportsIndex = -1) -> None:
        ...
class ResidentStage:
    @property
    def enforce_eager(self) -> bool:
        ...
    @property
    def local_index(self) -> int:
        ...
    @property
    def requested_bytes(self) -> int:
        ...
    @property
    def stage_id(self) -> int:
        ...
    @property
    def utilization_ppm(self) -> int:
        ...
    @property
    def utilization_text(self) -> str:
        ...
class DeviceCheck:
    @property
    def admission_ok(self) -> bool:
        ...
    @property
    def admission_required_bytes(self) -> int:
        ...
    @property
    def free_bytes(self) -> int:
        ...
    @property
    def free_is_live(self) -> bool:
        ...
    @property
    def free_source(self) -> str:
        ...
    @property
    def headroom_bytes(self) -> int:
        ...
    @property
    def headroom_ppm(self) -> int:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def over_committed(self) -> bool:
        ...
    @property
    def physical_id(self) -> int:
        ...
    @property
    def reason(self) -> str:
        ...
    @property
    def requested_bytes(self) -> int:
        ...
    @property
    def stages(self) -> list[ResidentStage]:
        ...
    @property
    def total_bytes(self) -> int:
        ...
    @property
    def utilization_expression(self) -> str:
        ...
    @property
    def utilization_ppm(self) -> int:
        ...
    @property
    def utilization_text(self) -> str:
        ...
class StartupPrediction:
    @property
    def device(self) -> str:
        ...
    @property
    def fails(self) -> bool:
        ...
    @property
    def free_bytes(self) -> int:
        ...
    @property
    def message(self) -> str:
        ...
    @property
    def physical_id(self) -> int:
        ...
    @property
    def requested_bytes(self) -> int:
        ...
    @property
    def stage_id(self) -> int:
        ...
class StageLimit:
    @property
    def limiting_device(self) -> int:
        ...
    @property
    def max_utilization_ppm(self) -> int:
        ...
    @property
    def stage_id(self) -> int:
        ...
class StageCheckResult:
    @property
    def config(self) -> StageConfigSet:
        ...
    @property
    def devices(self) -> list[DeviceCheck]:
        ...
    @property
    def limits(self) -> list[StageLimit]:
        ...
    @property
    def notes(self) -> list[str]:
        ...
    @property
    def ok(self) -> bool:
        ...
    @property
    def oom_advice(self) -> list[str]:
        ...
    @property
    def plan_lines(self) -> list[str]:
        ...
    @property
    def problems(self) -> list[str]:
        ...
    @property
    def startup(self) -> list[StartupPrediction]:
        ...
    @property
    def suggestions(self) -> list[str]:
        ...
class StagePlanSummary:
    @property
    def available_kv_cache_bytes(self) -> int:
        ...
    @property
    def failure_message(self) -> str:
        ...
    @property
    def failure_phase(self) -> str:
        ...
    @property
    def fits(self) -> bool:
        ...
    @property
    def free_bytes(self) -> int:
        ...
    @property
    def line(self) -> str:
        ...
    @property
    def max_concurrency(self) -> float:
        ...
    @property
    def max_model_len(self) -> int:
        ...
    @property
    def model(self) -> str:
        ...
    @property
    def non_kv_cache_bytes(self) -> int:
        ...
    @property
    def num_blocks(self) -> int:
        ...
    @property
    def num_tokens(self) -> int:
        ...
    @property
    def physical_id(self) -> int:
        ...
    @property
    def requested_bytes(self) -> int:
        ...
    @property
    def shortfall_bytes(self) -> int:
        ...
    @property
    def stage_id(self) -> int:
        ...
    @property
    def total_bytes(self) -> int:
        ...
    @property
    def weights_bytes(self) -> int:
        ...
class MemoryImbalance:
    @property
    def free_bytes_per_rank(self) -> list[int]:
        ...
    @property
    def imbalanced(self) -> bool:
        ...
    @property
    def lost_bytes(self) -> int:
        ...
    @property
    def max_free_bytes(self) -> int:
        ...
    @property
    def max_rank(self) -> int:
        ...
    @property
    def message(self) -> str:
        ...
    @property
    def min_free_bytes(self) -> int:
        ...
    @property
    def min_rank(self) -> int:
        ...
    @property
    def ratio(self) -> float:
        ...
    @property
    def warning_ranks(self) -> list[int]:
        ...
class WorkerLayout:
    @property
    def available_kv_bytes(self) -> int:
        ...
    @property
    def budget_bytes(self) -> int:
        ...
    @property
    def end_layer(self) -> int:
        ...
    @property
    def extra_blocks(self) -> int:
        ...
    @property
    def fails_startup(self) -> bool:
        ...
    @property
    def first_layer(self) -> int:
        ...
    @property
    def free_bytes(self) -> int:
        ...
    @property
    def holds_embedding(self) -> bool:
        ...
    @property
    def holds_lm_head(self) -> bool:
        ...
    @property
    def num_blocks(self) -> int:
        ...
    @property
    def overhead_bytes(self) -> int:
        ...
    @property
    def pp_rank(self) -> int:
        ...
    @property
    def rank(self) -> int:
        ...
    @property
    def total_bytes(self) -> int:
        ...
    @property
    def tp_rank(self) -> int:
        ...
    @property
    def weights_bytes(self) -> int:
        ...
class RankLayout:
    @property
    def failure_message(self) -> str:
        ...
    @property
    def fits(self) -> bool:
        ...
    @property
    def kv_cache(self) -> KvCacheCapacity:
        ...
    @property
    def tightest_rank(self) -> int:
        ...
    @property
    def tightest_reason(self) -> str:
        ...
    @property
    def workers(self) -> list[WorkerLayout]:
        ...
class StageDemand:
    def __init__(self, stage_id: typing.SupportsInt | typing.SupportsIndex, world_size: typing.SupportsInt | typing.SupportsIndex, devices: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], fixed_bytes: typing.SupportsInt | typing.SupportsIndex, kv_bytes_needed: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    @property
    def devices(self) -> list[int]:
        ...
    @property
    def fixed_bytes(self) -> int:
        ...
    @property
    def kv_bytes_needed(self) -> int:
        ...
    @property
    def stage_id(self) -> int:
        ...
    @property
    def world_size(self) -> int:
        ...
class StageAssignment:
    @property
    def devices(self) -> list[int]:
        ...
    @property
    def kv_bytes(self) -> int:
        ...
    @property
    def kv_bytes_needed(self) -> int:
        ...
    @property
    def kv_headroom(self) -> float:
        ...
    @property
    def min_utilization_ppm(self) -> int:
        ...
    @property
    def requested_bytes(self) -> int:
        ...
    @property
    def stage_id(self) -> int:
        ...
    @property
    def utilization_ppm(self) -> int:
        ...
    @property
    def utilization_text(self) -> str:
        ...
class AssignedDevice:
    @property
    def name(self) -> str:
        ...
    @property
    def physical_id(self) -> int:
        ...
    @property
    def stage_ids(self) -> list[int]:
        ...
    @property
    def total_bytes(self) -> int:
        ...
    @property
    def utilization_ppm(self) -> int:
        ...
    @property
    def utilization_text(self) -> str:
        ...
class UtilizationAssignment:
    @property
    def devices(self) -> list[AssignedDevice]:
        ...
    @property
    def feasible(self) -> bool:
        ...
    @property
    def message(self) -> str:
        ...
    @property
    def shortfall_bytes(self) -> int:
        ...
    @property
    def stages(self) -> list[StageAssignment]:
        ...
    @property
    def unsatisfied_device(self) -> int:
        ...
    @property
    def unsatisfied_stage_id(self) -> int:
        ...
def active_device_name() -> str:
    ...
def allowed_kv_cache_dtypes() -> str:
    ...
def apply_vllm_version_kv_rules(options: KvCacheOptions, version: str) -> str:
    """
    Sets the release's KV rules on options (as plan() applies them); returns the profile's version.
    """
def assign_utilizations(demands: collections.abc.Sequence[StageDemand], devices: collections.abc.Sequence[DeviceMemoryInfo], max_device_utilization_ppm: typing.SupportsInt | typing.SupportsIndex, step_ppm: typing.SupportsInt | typing.SupportsIndex) -> UtilizationAssignment:
    ...
def auto_fit_max_model_len(spec: ModelSpec, available_bytes_per_worker: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], options: KvCacheOptions) -> int:
    ...
def auto_fit_max_model_len_for(cache: SizingCache, available_bytes: typing.Any, settings: KvCacheSettings) -> int:
    ...
def check_device(device: typing.SupportsInt | typing.SupportsIndex) -> None:
    ...
def check_enough_kv_cache_memory(spec: ModelSpec, available_bytes_per_worker: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], options: KvCacheOptions) -> None:
    ...
def check_memory_imbalance(free_bytes_per_rank: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], ratio: typing.SupportsFloat | typing.SupportsIndex = 0.9) -> MemoryImbalance:
    ...
def check_request_memory(total_memory_bytes: typing.SupportsInt | typing.SupportsIndex, free_memory_bytes: typing.SupportsInt | typing.SupportsIndex, gpu_memory_utilization: typing.SupportsFloat | typing.SupportsIndex, device: str = 'cuda:0') -> RequestedMemory:
    ...
def check_speculative_config_keys(json_text: str, vllm_version: str) -> list[str]:
    """
    The keys accepted without a memory effect; raises for a key vLLM refuses or a value not modelled.
    """
def check_stages(config: StageConfigSet, devices: collections.abc.Sequence[DeviceMemoryInfo], default_device: DeviceMemoryInfo, reserve_bytes: typing.SupportsInt | typing.SupportsIndex = 0, free_is_live: bool = False) -> StageCheckResult:
    ...
def check_stages_with_plans(config: StageConfigSet, devices: collections.abc.Sequence[DeviceMemoryInfo], default_device: DeviceMemoryInfo, reserve_bytes: typing.SupportsInt | typing.SupportsIndex, free_is_live: bool, models: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, ModelSpec, str, typing.SupportsInt | typing.SupportsIndex, PlanInputs]]) -> tuple[StageCheckResult, list[StagePlanSummary]]:
    ...
def close_gpu_matches(name: str, limit: typing.SupportsInt | typing.SupportsIndex = 5) -> list[str]:
    ...
def closest_setting_name(name: str) -> str:
    ...
def compute_memory_profiling(before_create: SnapshotRecord, before_profile: SnapshotRecord, after_profile: SnapshotRecord, weights_memory: typing.SupportsInt | typing.SupportsIndex, peaks: SamplerPeaks | None = None, formula: str = 'components') -> ProfilingFigures:
    ...
def compute_mm_encoder_budget(max_tokens_per_item: typing.SupportsInt | typing.SupportsIndex, max_num_batched_tokens: typing.SupportsInt | typing.SupportsIndex, max_num_seqs: typing.SupportsInt | typing.SupportsIndex, max_model_len: typing.SupportsInt | typing.SupportsIndex, limit_per_prompt: typing.SupportsInt | typing.SupportsIndex = 999, chunked_prefill: bool = True) -> MmEncoderBudget:
    ...
def compute_rank_layout(spec: ModelSpec, total_memory_bytes_per_worker: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], gpu_memory_utilization: typing.SupportsFloat | typing.SupportsIndex, free_memory_bytes_per_worker: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], overhead_bytes_per_pp_rank: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dtype: str, quantization: str, tensor_parallel_size: typing.SupportsInt | typing.SupportsIndex, pipeline_parallel_size: typing.SupportsInt | typing.SupportsIndex, kv: KvCacheOptions) -> RankLayout:
    ...
def cuda_driver_status() -> tuple[bool, str, int, int]:
    """
    (driver usable, reason if not, device count, driver version); no cuInit here
    """
def cudagraph_profiling_line(cudagraph_estimate_bytes: typing.SupportsInt | typing.SupportsIndex, total_memory_bytes: typing.SupportsInt | typing.SupportsIndex, gpu_memory_utilization: typing.SupportsFloat | typing.SupportsIndex, estimate_cudagraphs: bool = True) -> str:
    ...
def current_device() -> int:
    ...
def current_torch_memory_usage(device: typing.SupportsInt | typing.SupportsIndex) -> int:
    ...
def default_capture_sizes(max_size: typing.SupportsInt | typing.SupportsIndex) -> list[int]:
    ...
def derived_max_model_len(spec: ModelSpec) -> int:
    ...
def determine_available_kv_cache_memory(requested_bytes: typing.SupportsInt | typing.SupportsIndex, profile: ProfileMeasurements, options: AvailableKvOptions) -> AvailableKvMemory:
    ...
def device_count() -> int:
    """
    Visible devices of the active reader (0 without a driver); no cuInit here
    """
def device_total_bytes(info: DeviceMemoryInfo) -> int:
    """
    total_bytes when > 0, else the GPU catalog's figure for the name
    """
def different_devices_message(a: typing.SupportsInt | typing.SupportsIndex, b: typing.SupportsInt | typing.SupportsIndex) -> str:
    ...
def draft_weights(target: ModelSpec, config: SpeculativeConfig, tensor_parallel_size: typing.SupportsInt | typing.SupportsIndex, dtype: str, quantization: str) -> DraftWeights:
    ...
def empty_cache() -> None:
    ...
def estimate_max_model_len(spec: ModelSpec, available_bytes_per_worker: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], options: KvCacheOptions) -> int:
    ...
def estimate_max_model_len_for(cache: SizingCache, available_bytes: typing.Any, settings: KvCacheSettings) -> int:
    ...
def estimate_non_torch_increase(tensor_parallel_size: typing.SupportsInt | typing.SupportsIndex, pipeline_parallel_size: typing.SupportsInt | typing.SupportsIndex, constants: NonTorchConstants = ...) -> NonTorchBreakdown:
    ...
def estimated_cudagraph_line(cudagraph_estimate_bytes: typing.SupportsInt | typing.SupportsIndex) -> str:
    ...
def evaluate_keywords(cache: SizingCache, keywords: dict, gpu_given: bool, gpu_total: typing.SupportsInt | typing.SupportsIndex, gpu_name: str, vllm_version: str, vllm_version_source: str, allow_long_max_model_len: bool) -> typing.Any:
    ...
@typing.overload
def evaluate_plan(spec: ModelSpec, inputs: PlanInputs) -> StartupPlan:
    ...
@typing.overload
def evaluate_plan(cache: SizingCache, inputs: PlanInputs) -> StartupPlan:
    ...
def evaluate_request(cache: SizingCache, request: PlanRequest, total_memory_bytes: typing.SupportsInt | typing.SupportsIndex, gpu_name: str, vllm_version: str, vllm_version_source: str, allow_long_max_model_len: bool) -> ...:
    ...
def failure_phase_names() -> list[str]:
    """
    Phase names indexed by the sweep's failure_phase codes (-1: invalid input).
    """
def format_gib(num_bytes: typing.SupportsInt | typing.SupportsIndex) -> str:
    """
    str(round(num_bytes / 2**30, 2)), as vLLM prints
    """
def format_mib(num_bytes: typing.SupportsInt | typing.SupportsIndex) -> str:
    """
    str(round(num_bytes / 2**20, 2))
    """
def format_thousands(value: typing.SupportsInt | typing.SupportsIndex) -> str:
    """
    f'{value:,}'
    """
def format_utilization_ppm(ppm: typing.SupportsInt | typing.SupportsIndex) -> str:
    ...
def gpu_catalog() -> list[typing.Any]:
    """
    Every catalog entry as a dict.
    """
def host_memory() -> tuple[int, int]:
    """
    (MemTotal, MemAvailable) in bytes
    """
def install_device(reader: DeviceReader) -> None:
    """
    Make a (simulated) device the active one
    """
def is_integrated(device: typing.SupportsInt | typing.SupportsIndex) -> bool:
    ...
def kv_cache_capacity(spec: ModelSpec, available_bytes_per_worker: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], options: KvCacheOptions) -> KvCacheCapacity:
    ...
def kv_cache_capacity_for(cache: SizingCache, available_bytes: typing.Any, settings: KvCacheSettings, num_speculative_tokens: typing.SupportsInt | typing.SupportsIndex = 0) -> KvCacheCapacity:
    ...
def kv_cache_capacity_from_keywords(cache: SizingCache, available_bytes: typing.Any, max_model_len: typing.Any, num_speculative_tokens: typing.SupportsInt | typing.SupportsIndex, installed_version: str, keywords: dict) -> KvCacheCapacity:
    ...
def kv_cache_log_lines(capacity: KvCacheCapacity) -> list[str]:
    ...
def kv_cache_memory_shortfall(spec: ModelSpec, available_bytes_per_worker: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], options: KvCacheOptions) -> str:
    ...
def kv_cache_memory_shortfall_for(cache: SizingCache, available_bytes: typing.Any, settings: KvCacheSettings) -> str:
    ...
def kv_log_lines_for(version: str, engine: str, num_blocks: typing.SupportsInt | typing.SupportsIndex, num_tokens: typing.SupportsInt | typing.SupportsIndex, max_concurrency: typing.SupportsFloat | typing.SupportsIndex, block_size: typing.SupportsInt | typing.SupportsIndex, bytes_per_block: typing.SupportsInt | typing.SupportsIndex, max_model_len: typing.SupportsInt | typing.SupportsIndex, num_groups: typing.SupportsInt | typing.SupportsIndex) -> list[str]:
    ...
def kv_options_for_release(settings: KvCacheSettings, num_speculative_tokens: typing.SupportsInt | typing.SupportsIndex = 0) -> KvCacheOptions:
    ...
def limits() -> dict[str, typing.Any]:
    """
    The core's bounds (limits.h, json.h) by the names vllm_mem._limits gives them.
    """
def long_max_model_len_error(version: str, spec: ModelSpec, max_model_len: typing.SupportsInt | typing.SupportsIndex, allow_long: bool) -> str:
    ...
def lookup_gpu(name: str) -> dict[str, typing.Any]:
    ...
def lookup_vllm_version(version: str) -> tuple[str, str, bool, str]:
    """
    (profile version, normalised asked version, newer than known, note).
    """
def max_shared_memory_per_block(device: typing.SupportsInt | typing.SupportsIndex) -> int:
    ...
def measure_snapshot(device: typing.SupportsInt | typing.SupportsIndex) -> SnapshotRecord:
    """
    MemorySnapshot.measure() on the active device
    """
def measure_snapshot_fields(device: typing.SupportsInt | typing.SupportsIndex) -> tuple[int, int, int, int, int, int, float, int, bool, int, str]:
    ...
def mem_get_info(device: typing.SupportsInt | typing.SupportsIndex) -> tuple[int, int]:
    """
    (free, total) as torch.cuda.mem_get_info
    """
def memory_profiling_repr(figures: ProfilingFigures) -> str:
    ...
def normalize_gpu_name(name: str) -> str:
    ...
def normalize_speculative_method(method: str) -> str:
    ...
def num_parameters(spec: ModelSpec) -> int:
    """
    Parameter count of the checkpoint (tied embeddings counted once, a multimodal checkpoint's vision tower and projector included)
    """
def nvml_memory(device: typing.SupportsInt | typing.SupportsIndex) -> tuple[bool, str, int, int, int, str]:
    """
    (available, reason if not, free, total, reserved, PCI bus id) from NVML; no context, no cuInit
    """
def parse_cuda_device(text: str) -> int | None:
    """
    'cuda' -> None, 'cuda:N' -> N; ValueError for anything else
    """
def parse_cuda_visible_devices(text: str) -> list[int]:
    ...
def parse_stage_config(json_text: str, cuda_visible_devices: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] = [], num_visible_devices: typing.SupportsInt | typing.SupportsIndex = 0) -> StageConfigSet:
    ...
def plan_settings() -> list[typing.Any]:
    """
    The settings table: one dict per row (name, kind, bounds and why, unset, flag, help, default).
    """
def process_memory(device: typing.SupportsInt | typing.SupportsIndex) -> tuple[bool, str, list[tuple[int, int]]]:
    """
    NVML per-process usage on the real device; no cuInit here
    """
def python_float_repr(value: typing.SupportsFloat | typing.SupportsIndex) -> str:
    ...
def read_speculative_config_fields(json_text: str, as_target: bool, config: SpeculativeConfig) -> SpeculativeConfig:
    ...
def release_device_memory_under_pressure(device: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    bytes released, 0 when nothing was done
    """
def remove_device(reader: DeviceReader) -> bool:
    ...
def reset_peak_memory_stats(device: typing.SupportsInt | typing.SupportsIndex) -> None:
    ...
def resolve_batch_defaults(version: str, engine: str, usage_context: str, total_memory_bytes: typing.SupportsInt | typing.SupportsIndex, gpu_name: str, max_model_len: typing.SupportsInt | typing.SupportsIndex) -> tuple[int, int]:
    ...
def resolved_num_speculative_tokens(target: ModelSpec, config: SpeculativeConfig, tensor_parallel_size: typing.SupportsInt | typing.SupportsIndex, pipeline_parallel_size: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    num_speculative_tokens as vLLM resolves it (the drafter's n_predict when not given).
    """
def rule_of_thumb_activation_bytes(weight_bytes: typing.SupportsInt | typing.SupportsIndex) -> tuple[int, int]:
    ...
def rule_of_thumb_kv_cache_bytes(spec: ModelSpec, batch_size: typing.SupportsInt | typing.SupportsIndex, seq_len: typing.SupportsInt | typing.SupportsIndex, dtype: str = 'auto') -> int:
    ...
def rule_of_thumb_weight_bytes(spec: ModelSpec, dtype: str = 'auto') -> int:
    ...
def run_sweep(spec: ModelSpec, axes: SweepAxes) -> dict[str, typing.Any]:
    ...
def served_dtype(spec: ModelSpec, dtype: str) -> str:
    """
    The dtype vLLM serves the model in for --dtype (auto: float32 as bfloat16).
    """
def spec_decode_capture_sizes(capture_sizes: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], max_capture_size: typing.SupportsInt | typing.SupportsIndex, max_num_seqs: typing.SupportsInt | typing.SupportsIndex, max_num_batched_tokens: typing.SupportsInt | typing.SupportsIndex, uniform_decode_query_len: typing.SupportsInt | typing.SupportsIndex) -> list[int]:
    ...
def speculative_config_keys() -> list[typing.Any]:
    """
    The --speculative-config key table (plan/speculative_config_keys.json), one dict per key.
    """
def speculative_unknown_keys_refused_since() -> str:
    ...
def stage_demand_for(spec: ModelSpec, inputs: PlanInputs, stage_id: typing.SupportsInt | typing.SupportsIndex, devices: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], concurrency: typing.SupportsFloat | typing.SupportsIndex) -> StageDemand:
    """
    A stage's need from plan()'s settings object (PlanInputs, built as plan() builds it).
    """
def subtract_snapshots(a: SnapshotRecord, b: SnapshotRecord) -> SnapshotRecord:
    """
    a - b, field-wise
    """
def suggest_kv_cache_memory_bytes(init_free_memory_bytes: typing.SupportsInt | typing.SupportsIndex, total_memory_bytes: typing.SupportsInt | typing.SupportsIndex, gpu_memory_utilization: typing.SupportsFloat | typing.SupportsIndex, requested_bytes: typing.SupportsInt | typing.SupportsIndex, weights_bytes: typing.SupportsInt | typing.SupportsIndex, peak_activation_bytes: typing.SupportsInt | typing.SupportsIndex, non_torch_bytes: typing.SupportsInt | typing.SupportsIndex, cudagraph_bytes: typing.SupportsInt | typing.SupportsIndex, kv_cache_in_use_bytes: typing.SupportsInt | typing.SupportsIndex) -> KvCacheMemorySuggestion:
    ...
def suggest_plan_changes(spec: ModelSpec, plan: StartupPlan) -> list[PlanSuggestion]:
    ...
def supported_model_types() -> list[str]:
    """
    config.json model_types with exact sizing rules (model_families.json)
    """
def synchronize(device: typing.SupportsInt | typing.SupportsIndex) -> None:
    ...
def torch_memory_stats(device: typing.SupportsInt | typing.SupportsIndex) -> list[tuple[str, int]]:
    """
    [(key, value)] as torch.cuda.memory_stats, sorted
    """
def torch_provider_info() -> tuple[str, bool, str]:
    """
    (where the provider is looked for, whether it is loaded, why it was refused or '')
    """
def torch_stats(device: typing.SupportsInt | typing.SupportsIndex) -> AllocatorStats:
    ...
def utilization_to_ppm(utilization: typing.SupportsFloat | typing.SupportsIndex) -> int:
    ...
def validate_setting(name: str, value: typing.Any, field: str = '') -> typing.Any:
    """
    One value checked and converted by its row of the table; None stays None where unset is allowed.
    """
def vllm_profile_settings(version: str) -> dict[str, typing.Any]:
    ...
def vllm_version_profiles() -> list[typing.Any]:
    """
    Every vLLM release profile, oldest first, each rule with its value and source.
    """
def weight_breakdown(spec: ModelSpec, dtype: str = 'auto', quantization: str | None = None, tensor_parallel_size: typing.SupportsInt | typing.SupportsIndex = 1, pipeline_parallel_size: typing.SupportsInt | typing.SupportsIndex = 1, mxfp4_backend: str = 'triton', mp_linear_kernel: str = '') -> dict[str, typing.Any]:
    """
    Weight bytes per component and per pipeline rank
    """
def weight_bytes(spec: ModelSpec, dtype: str = 'auto', quantization: str | None = None, tensor_parallel_size: typing.SupportsInt | typing.SupportsIndex = 1, pipeline_parallel_size: typing.SupportsInt | typing.SupportsIndex = 1, mxfp4_backend: str = 'triton', mp_linear_kernel: str = '') -> int:
    """
    Weight bytes of the fullest GPU (vLLM's 'Model loading took')
    """
def weight_bytes_for(cache: SizingCache, dtype: str, quantization: str | None, tensor_parallel_size: typing.SupportsInt | typing.SupportsIndex, pipeline_parallel_size: typing.SupportsInt | typing.SupportsIndex, mxfp4_backend: str, mp_linear_kernel: str) -> int:
    """
    weight_bytes on the model's SizingCache (each weight setting computed once)
    """
KV_SUGGESTION_BUFFER_BYTES: int = 157286400
SAMPLER_MAX_INTERVAL_S: float = 60.0
SAMPLER_MIN_INTERVAL_S: float = 1e-05
__version__: str = '0.4.0'
