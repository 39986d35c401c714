/*!
 * \file core/plan/gemma3n_tower_profile.h
 * \brief Gemma-3n's two towers in the profile run's encoder phase: MobileNet-V5's largest block over
 *        the dummy images, the USM conformer's largest layer over the dummy audios. Internal to the
 *        plan area (core/plan/mm_profile_estimate.cc calls it).
 */
#ifndef VLLM_MEM_CORE_PLAN_GEMMA3N_TOWER_PROFILE_H_
#define VLLM_MEM_CORE_PLAN_GEMMA3N_TOWER_PROFILE_H_

#include <cstdint>

#include "vllm_mem/model/audio_encoder.h"
#include "vllm_mem/model/audio_profile_item.h"
#include "vllm_mem/model/vision_encoder.h"

namespace vllm_mem {

/*! \brief Bytes MobileNet-V5 holds at its largest block over \p items dummy images of
 *  \p v.image_size (VisionEncoderSpec::timm_block_*), beside the pixels. */
int64_t MobileNetV5BlockBytes(const VisionEncoderSpec& v, int64_t items, int64_t dtype_bytes);

/*! \brief Bytes the USM conformer holds at its largest layer over \p items dummy audios, beside
 *  their features. */
int64_t Gemma3nAudioTowerBytes(const AudioEncoderSpec& a, const AudioDummyItem& item, int64_t items,
                               int64_t dtype_bytes);

}  // namespace vllm_mem

#endif  // VLLM_MEM_CORE_PLAN_GEMMA3N_TOWER_PROFILE_H_
