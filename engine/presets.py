"""The preset table: the open dLLMs and AR baselines people use, each with the driver that serves
it, its mask token and loader, and the decoding defaults its authors' code uses (DECODINGS). Data
only: engine/catalog.py finds the weights and builds backends from these."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# How a model is driven: which backend class serves it and how it is loaded. A backend's `kind`
# (diffusion or autoregressive) follows from the driver (Preset.kind).
DRIVERS = ("full_attention", "block_causal", "causal", "sprout", "openai", "uniform_noise")
# Backend knobs a preset may set (see the backend modules for what each means).
OPTIONS = {
    "full_attention": ("attention",),
    "block_causal": ("mask_style", "store_flag", "use_cache"),
    "causal": (),
    "sprout": (),
    "openai": ("kind", "api_key_env"),     # a model behind an OpenAI-compatible server (backends/remote.py)
    "uniform_noise": (),                   # DiffusionGemma: canvases of random tokens (backends/uniform_noise.py)
}


@dataclass(frozen=True)
class Preset:
    name: str
    driver: str                         # one of DRIVERS
    hf_id: str                          # hub id ("org/name"); for a local model, its folder
    mask_token: str | None = None       # diffusion: the mask token string ...
    mask_id: int | None = None          # ... or its id
    logit_shift: bool = False           # position i predicted from hidden i-1 (Dream, Fast-dLLM v2)
    trust_remote_code: bool = False
    loader: str = "AutoModelForCausalLM"  # or "AutoModel"
    chat_template: str = "the tokenizer's own"
    defaults: Mapping[str, Any] = field(default_factory=dict)   # GenerationConfig fields
    description: str = ""
    model_types: tuple[str, ...] = ()   # config.json model_type values (lower case) of this model
    options: Mapping[str, Any] = field(default_factory=dict)    # backend knobs, see OPTIONS
    local_path: str | None = None       # set when the weights come from a folder
    follows: str | None = None          # the DECODINGS entry its defaults reproduce, if any

    @property
    def kind(self) -> str:
        if self.driver == "openai":
            return self.options.get("kind", "autoregressive")
        if self.driver == "sprout":
            return "autoregressive" if self.options.get("causal") else "diffusion"
        return {"causal": "autoregressive", "full_attention": "diffusion", "block_causal": "diffusion",
                "uniform_noise": "diffusion"}.get(self.driver, "unknown")


AR_DEFAULTS = {"gen_length": 128, "temperature": 0.0}


@dataclass(frozen=True)
class Decoding:
    """How an upstream codebase decodes, as GenerationConfig fields, and where that was read."""

    name: str
    upstream: str                       # repository, file and commit the settings follow
    settings: Mapping[str, Any]
    tested: str                         # which test compares the engine with a reference loop


# Upstream rules that differ from ours (engine/samplers.py): confidence from the untempered
# logits, the mask logit kept in the softmax, threshold/factor loops that run until the block
# is done (steps is no cap). Early stop at an EOS block stays on: it changes only positions
# after the first EOS, which the answer drops.
_UPSTREAM_RULES = {"untempered_confidence": True, "keep_mask_logit": True, "steps_cap": False}
DECODINGS: dict[str, Decoding] = {d.name: d for d in (
    Decoding("llada", "ML-GSAI/LLaDA generate.py @ b7e6c3565f194352da44b38dd12b6970597309f3",
             {**_UPSTREAM_RULES, "sampler": "low_confidence"}, "tests/reference/test_upstream_llada.py"),
    Decoding("fast_dllm_threshold", "NVlabs/Fast-dLLM llada/generate.py @ 24cc59e75f20a6384bae8c905965bb090b96388e",
             {**_UPSTREAM_RULES, "sampler": "threshold", "threshold": 0.9}, "tests/reference/test_upstream_llada.py"),
    Decoding("fast_dllm_factor", "NVlabs/Fast-dLLM llada/generate.py get_transfer_index_dynamic (after 24cc59e)",
             {**_UPSTREAM_RULES, "sampler": "factor", "factor": 1.0}, "tests/reference/test_upstream_llada.py"),
    # SDAR: tempered confidence, strict > threshold or the scheduled top k (not capped at the masks
    # left: decided tokens may be re-sampled, as SDAR's code does), blocks aligned to the prompt,
    # probabilities in the model's dtype (SDAR's lm_head output is not cast).
    Decoding("sdar", "JetAstra/SDAR generate.py block_diffusion_generate @ c2041a8333333d685f6e15122c84f60f51f85ebd",
             {"keep_mask_logit": True, "aligned_blocks": True, "sampler": "threshold_or_top_k_uncapped",
              "model_dtype_probs": True, "threshold": 0.85},
             "tests/reference/test_upstream_sdar.py"),
    # Fast-dLLM v2: SDAR's alignment, plus the greedy first token, 8-token sub-blocks, and its
    # block count (gen_length // block + P // block: the prompt's tail counts toward gen_length),
    # sampling in the logits' dtype (bf16) with its nucleus on the probabilities.
    Decoding("fast_dllm_v2", "NVlabs/Fast-dLLM v2/generation_functions.py batch_sample (published after 24cc59e)",
             {"keep_mask_logit": True, "aligned_blocks": True, "greedy_first_token": True, "sub_block_size": 8,
              "tail_in_length": True, "steps_cap": False, "sampler": "threshold_strict", "threshold": 0.9,
              "top_p": 0.95, "model_dtype_probs": True},
             "tests/reference/test_upstream_fast_dllm_v2.py"),
    # LLaDA2.0: SDAR's rule (top k capped at the masks left) over the whole sequence, no cache,
    # probabilities in the logits' dtype (its forward casts them to float32).
    Decoding("llada2", "inclusionAI/LLaDA2.0-mini modeling_llada2_moe.py generate (hub; copy @ f1cb636 in "
             "yks23/Information-Gain-Sampler)",
             {"keep_mask_logit": True, "aligned_blocks": True, "sampler": "threshold_or_top_k",
              "model_dtype_probs": True, "threshold": 0.95},
             "tests/reference/test_upstream_llada2.py"),
    # LLaDA2.1: LLaDA2.0's layout and dtype, its draft-then-edit rule (joint_threshold) with the
    # quality mode's thresholds (speedy mode: threshold 0.5, edit threshold 0.0) and 16 post steps.
    Decoding("llada21", "lingjiechen2/dllm dllm/pipelines/llada21/models/modeling_llada21_moe.py generate @ "
             "7520f3c (sampler.py @ 9268328)",
             {"keep_mask_logit": True, "aligned_blocks": True, "sampler": "joint_threshold",
              "model_dtype_probs": True, "threshold": 0.7, "edit_threshold": 0.5, "max_post_steps": 16},
             "tests/reference/test_upstream_llada21.py"),
    # Dream: the whole canvas as one block (block_size = gen_length), Dream's truncating schedule.
    Decoding("dream", "Dream-org/Dream-v0-Instruct-7B generation_utils.py _sample (hub; read from copies), "
             "alg='entropy' as DreamLM/Dream @ fac0a7f demo_completion.py calls it",
             {"keep_mask_logit": True, "sampler": "entropy", "schedule": "dream"},
             "tests/reference/test_upstream_dream.py"),
    # DiffusionGemma: canvases of 256 random tokens, at most 48 steps each, the entropy bound 0.1,
    # temperature 0.8 -> 0.4, stop once the draft is stable for a step and the mean entropy < 0.005
    # (DiffusionGemmaGenerationConfig._get_default_generation_params). A checkpoint's own
    # generation_config.json may set others; the preset keeps transformers' defaults.
    Decoding("diffusion_gemma", "transformers 5.25.0 models/diffusion_gemma/generation_diffusion_gemma.py generate",
             {"sampler": "entropy_bounded", "block_size": 256, "steps": 48, "entropy_bound": 0.1, "t_min": 0.4,
              "t_max": 0.8, "stability_threshold": 1, "confidence_threshold": 0.005, "argmax_draws": False},
             "tests/reference/test_upstream_diffusion_gemma.py"),
)}

# Caches: LLaDA's generate.py and Dream's demo_completion.py decode without one, so these presets
# say cache "none". Fast-dLLM v1's demos add the prefix or dual cache (GenerationConfig.cache), but
# through their own modeling files: the hub's LLaDA code keeps no keys and values and is refused
# with a sentence (engine/backends/kv_window.py says what a model needs).
PRESETS: tuple[Preset, ...] = (
    Preset("LLaDA-8B-Instruct", "full_attention", "GSAI-ML/LLaDA-8B-Instruct", mask_id=126336,
           trust_remote_code=True, loader="AutoModel", model_types=("llada",),
           defaults={"gen_length": 128, "block_size": 32, "steps": 32, **DECODINGS["llada"].settings, "cache": "none"},
           description="LLaDA 8B instruct: masked diffusion, full attention, no KV cache.", follows="llada"),
    Preset("Dream-v0-Instruct-7B", "full_attention", "Dream-org/Dream-v0-Instruct-7B", mask_id=151666,
           logit_shift=True, trust_remote_code=True, loader="AutoModel", model_types=("dream",),
           defaults={"gen_length": 128, "block_size": 128, "steps": 128, **DECODINGS["dream"].settings,
                     "temperature": 0.2, "top_p": 0.95, "cache": "none"},
           description="Dream 7B instruct: diffusion adapted from Qwen2.5, full attention, shifted logits.",
           follows="dream"),
    *(Preset(f"Fast_dLLM_v2_{size}", "block_causal", f"Efficient-Large-Model/Fast_dLLM_v2_{size}", mask_id=151665,
             logit_shift=True, trust_remote_code=True, model_types=("fast_dllm_qwen",),
             options={"mask_style": "block_size", "store_flag": "update_past_key_values"},
             defaults={"gen_length": 128, "block_size": 32, "steps": 32, **DECODINGS["fast_dllm_v2"].settings},
             follows="fast_dllm_v2",
             description=f"Fast-dLLM v2 {size}: block diffusion from Qwen2.5, KV cache, shifted logits.")
      for size in ("1.5B", "7B")),
    Preset("SDAR-1.7B-Chat", "block_causal", "JetLM/SDAR-1.7B-Chat", mask_token="<|MASK|>",
           trust_remote_code=True, model_types=("sdar",), options={"mask_style": "bool", "store_flag": "store_kv"},
           defaults={"gen_length": 128, "block_size": 4, "steps": 4, **DECODINGS["sdar"].settings, "threshold": 0.9},
           description="SDAR 1.7B chat: block diffusion from Qwen3, KV cache, small blocks.", follows="sdar"),
    Preset("SDAR-4B-Chat", "block_causal", "JetLM/SDAR-4B-Chat", mask_token="<|MASK|>",
           trust_remote_code=True, model_types=("sdar",), options={"mask_style": "bool", "store_flag": "store_kv"},
           defaults={"gen_length": 128, "block_size": 4, "steps": 4, **DECODINGS["sdar"].settings, "threshold": 0.9},
           description="SDAR 4B chat: block diffusion from Qwen3, KV cache, small blocks.", follows="sdar"),
    # LLaDA2's own generate recomputes the prefix under an additive block mask, without a cache.
    Preset("LLaDA2.0-mini", "block_causal", "inclusionAI/LLaDA2.0-mini", mask_id=156895,
           trust_remote_code=True, model_types=("llada2_moe",),
           options={"mask_style": "additive", "use_cache": False},
           defaults={"gen_length": 128, "block_size": 32, "steps": 32, **DECODINGS["llada2"].settings},
           description="LLaDA2.0 mini (16B MoE, 1.4B active): block diffusion, additive block-causal mask.",
           follows="llada2"),
    # LLaDA2.1 runs LLaDA2.0's network (the same mask id and block-causal mask) and edits as it decodes.
    Preset("LLaDA2.1-mini", "block_causal", "inclusionAI/LLaDA2.1-mini", mask_id=156895,
           trust_remote_code=True, model_types=("llada21_moe",),
           options={"mask_style": "additive", "use_cache": False},
           defaults={"gen_length": 128, "block_size": 32, "steps": 32, "temperature": 0.0,
                     **DECODINGS["llada21"].settings},
           description="LLaDA2.1 mini (16B MoE): LLaDA2.0's block diffusion that also rewrites decided tokens "
                       "(draft, then edit).",
           follows="llada21"),
    # DiffusionGemma ships in transformers (no remote code); its tokenizer carries Gemma 4's chat
    # template. The AR baseline of its family is the Gemma 4 MoE of the same size.
    Preset("DiffusionGemma-26B-A4B-it", "uniform_noise", "google/diffusiongemma-26B-A4B-it",
           loader="AutoModelForImageTextToText", model_types=("diffusion_gemma",),
           chat_template="Gemma 4's, from the checkpoint's tokenizer",
           defaults={"gen_length": 256, **DECODINGS["diffusion_gemma"].settings}, follows="diffusion_gemma",
           description="DiffusionGemma 26B-A4B instruct (MoE, 4B active): each 256-token canvas starts as random "
                       "tokens and is denoised whole; accepted tokens stay, the rest are redrawn."),
    Preset("gemma-4-26B-A4B-it", "causal", "google/gemma-4-26B-A4B-it", defaults=AR_DEFAULTS,
           model_types=("gemma4",), chat_template="Gemma 4's, from the checkpoint's tokenizer",
           description="Gemma 4 26B-A4B instruct: the autoregressive baseline of DiffusionGemma's family (KV cache)."),
    Preset("Qwen2.5-1.5B-Instruct", "causal", "Qwen/Qwen2.5-1.5B-Instruct", defaults=AR_DEFAULTS,
           description="Qwen2.5 1.5B instruct: the autoregressive baseline (KV cache)."),
    Preset("Qwen2.5-7B-Instruct", "causal", "Qwen/Qwen2.5-7B-Instruct", defaults=AR_DEFAULTS,
           description="Qwen2.5 7B instruct: the autoregressive baseline (KV cache)."),
    Preset("Qwen3-1.7B", "causal", "Qwen/Qwen3-1.7B", defaults=AR_DEFAULTS,
           description="Qwen3 1.7B: the autoregressive baseline (KV cache)."),
)
PRESETS_BY_NAME = {p.name: p for p in PRESETS}
# playground.json: the Preset fields a folder may set for itself.
PLAYGROUND_KEYS = ("driver", "mask_token", "mask_id", "logit_shift", "trust_remote_code", "loader",
                   "chat_template", "defaults", "description", "options")
