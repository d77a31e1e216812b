"""DiffusionGemma's decoding loop, written from transformers 5.25.0
`src/transformers/models/diffusion_gemma/generation_diffusion_gemma.py`
(`DiffusionGemmaGenerationMixin.generate`, `_denoising_step`, `EntropyBoundSampler`,
`StableAndConfidentStoppingCriteria`, `LinearTemperatureScheduleLogitsProcessor`), batch of one,
dynamic cache, no images, and a tiny random DiffusionGemma to run it on.

What it does, and what it records at each step (upstream's `generate` exposes only the draft,
through `TextDiffusionStreamer.put_draft`; this loop hands back every step's state):
- the prompt goes through the encoder into a DynamicCache (positions 0 .. P-1);
- per canvas (ceil(max_new_tokens / C) at most): the canvas starts as C uniform random tokens
  (torch.randint); then for n = N, N-1, ..., 1 (steps left):
  * the decoder reads the canvas with the last step's tempered logits as self-conditioning
    (none at the first step), at positions after everything encoded;
  * tempered = logits / (t_min + (t_max - t_min) * n / N), n an int32 tensor;
  * drawn ~ multinomial(softmax(tempered)) (or its argmax with `argmax_draws`: ours, not upstream);
    draft = argmax(tempered);
  * entropy-bound acceptance: sort entropies ascending, accept while cumsum - H <= bound;
    accepted positions take the drawn token, the rest keep the canvas's;
  * renoise: every position not accepted gets a fresh uniform token (torch.randint);
  * stop when the draft equals each of the last S drafts (history starts at -1) and the mean
    entropy is below the confidence threshold, or after N steps;
- the last draft is appended to the output; a canvas holding EOS ends the generation, and the
  tokens after its first EOS become pad; otherwise the canvas is encoded after the context.
Random numbers come from the global generator, seeded once with torch.manual_seed(seed), as a
caller of upstream's `generate` seeds it.
"""

from __future__ import annotations

import math

import torch

from reference.tiny import BOS_ID, EOS_ID, PAD_ID, VOCAB_SIZE


def random_diffusion_gemma(*, seed: int, canvas_length: int = 16, initializer_range: float = 0.1, hidden: int = 64,
                           layers: int = 2):
    """A seeded random DiffusionGemmaForBlockDiffusion over the tiny vocabulary: hidden 64, 2 layers
    (sliding attention, the last one full), 4 experts (2 active), and a one-layer vision tower
    (the default one alone would make it ~170 M parameters). Eval mode, float32, CPU."""
    from transformers import DiffusionGemmaConfig, DiffusionGemmaForBlockDiffusion
    from transformers.utils import logging

    torch.manual_seed(seed)
    text = dict(vocab_size=VOCAB_SIZE, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                num_attention_heads=2, num_key_value_heads=1, head_dim=hidden // 2, num_experts=4, top_k_experts=2,
                moe_intermediate_size=hidden // 2, sliding_window=64, max_position_embeddings=1024,
                layer_types=["sliding_attention"] * (layers - 1) + ["full_attention"],
                pad_token_id=PAD_ID, eos_token_id=EOS_ID, bos_token_id=BOS_ID)
    vision = {"model_type": "gemma4_vision", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
              "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16}
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        config = DiffusionGemmaConfig(text_config=text, vision_config=vision, canvas_length=canvas_length,
                                      initializer_range=initializer_range)
        model = DiffusionGemmaForBlockDiffusion(config).eval()
    finally:
        logging.set_verbosity(verbosity)
    return model


def _entropy(logits: torch.Tensor) -> torch.Tensor:
    return torch.distributions.Categorical(logits=logits).entropy()                # (1, C)


@torch.no_grad()
def decode(model, prompt: list[int], *, max_new_tokens: int, steps: int, entropy_bound: float, t_min: float,
           t_max: float, stability: int, confidence: float, seed: int, eos_id: int = EOS_ID, pad_id: int = PAD_ID,
           argmax_draws: bool = False) -> tuple[list[int], list[dict]]:
    """(generated ids after the prompt, pad after the first EOS as upstream writes them; one record
    per step: canvas, step, draft, accepted (bool per position), noisy canvas, stopped)."""
    from transformers import DynamicCache

    torch.manual_seed(seed)
    length = model.config.canvas_length
    vocab = model.config.text_config.vocab_size
    cache = DynamicCache(config=model.config.get_text_config(decoder=True))
    encoder, decoder = model.model.encoder, model.model.decoder
    context = torch.tensor([prompt])                                                # (1, P)
    new_ids = context                                                               # what the encoder reads next
    encoded = 0
    output: list[int] = []
    records: list[dict] = []
    for canvas_index in range(math.ceil(max_new_tokens / length)):
        n = new_ids.shape[1]
        positions = torch.arange(encoded, encoded + n, dtype=torch.int32)[None]     # (1, n)
        masks = encoder.create_masks_for_generate(
            config=model.config, inputs_embeds=torch.empty((1, n, 0)), attention_mask=torch.ones(1, encoded + n,
                                                                                                  dtype=torch.bool),
            cache=cache, position_ids=positions)
        cache = encoder(input_ids=new_ids, attention_mask=masks, cache=cache, position_ids=positions).cache
        encoded += n
        canvas = torch.randint(0, vocab, (1, length))                               # (1, C)
        decoder_masks = decoder.create_diffusion_decoder_attention_mask(
            config=model.config, inputs_embeds=canvas.unsqueeze(-1), cache=cache,
            decoder_attention_mask=torch.ones(1, encoded + length, dtype=torch.bool))
        canvas_positions = torch.arange(encoded, encoded + length, dtype=torch.int32)[None]
        history = torch.full((stability, 1, length), -1, dtype=torch.long) if stability else None
        self_conditioning = None
        draft = canvas
        for left in range(steps, 0, -1):
            logits = model(decoder_input_ids=canvas, self_conditioning_logits=self_conditioning,
                           decoder_attention_mask=decoder_masks, cache=cache,
                           decoder_position_ids=canvas_positions).logits             # (1, C, V)
            temperature = t_min + ((t_max - t_min) * (torch.tensor(left, dtype=torch.int32) / steps))
            tempered = logits / temperature
            probs = torch.softmax(tempered, dim=-1, dtype=torch.float32)
            drawn = (torch.argmax(tempered, dim=-1) if argmax_draws else
                     torch.multinomial(probs.view(-1, vocab), num_samples=1).view(1, length))
            draft = torch.argmax(tempered, dim=-1)
            entropy = _entropy(tempered)
            ranked, order = torch.sort(entropy, dim=-1, descending=False)
            inside = torch.cumsum(ranked, dim=-1) - ranked <= entropy_bound
            accepted = torch.scatter(torch.zeros_like(inside), dim=-1, index=order, src=inside)
            kept = torch.where(accepted, drawn, canvas)
            noisy = torch.where(~accepted, torch.randint(0, vocab, (1, length)), kept)
            if history is None:
                stable = True
            else:
                stable = bool((history == draft[None]).all())
                history = torch.roll(history, shifts=-1, dims=0)
                history[-1] = draft
            stopped = stable and bool(_entropy(tempered).mean(dim=-1)[0] < confidence)
            records.append({"canvas": canvas_index, "step": steps - left, "draft": draft[0].tolist(),
                            "accepted": accepted[0].tolist(), "noisy": noisy[0].tolist(), "stopped": stopped})
            if stopped:
                break
            canvas, self_conditioning = noisy, tempered.to(decoder.embed_tokens.weight.dtype)
        ids = draft[0].tolist()
        if eos_id in ids:
            first = ids.index(eos_id)
            output += ids[: first + 1] + [pad_id] * (length - first - 1)
            break
        output += ids
        new_ids = draft
    return output, records
