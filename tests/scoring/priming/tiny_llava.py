"""A tiny LLaVA (transformers' LlavaForConditionalGeneration) saved as a model folder, no download.

- Tokenizer: a byte-pair tokenizer trained here (huggingface ``tokenizers``) on the FLEUR
  prompts and a few captions, written like Llama's: "▁" word marks, digits one per token
  ("0.85" is ▁ 0 . 8 5), punctuation apart, specials <unk> <s> </s> <pad> <image>.
- Processor: ``LlavaProcessor`` with LLaVA's image processor at 32 px, patches of 8 (16 image
  tokens), and a chat template written like llava-hf's LLaVA 1.5 template (system text, then
  "USER: <image>\\n..." and "ASSISTANT:").
- Model: a 2-layer CLIP vision tower and a 2-layer Llama, 64 wide, randomly initialised from a
  config with a seed.

A random language model never answers with a number, so with ``answer=True`` a few weights
are set so that its greedy answer is "0.85" with known digit probabilities: the token
embeddings of ":" (the prompt's last token), "0", ".", "8" and "5" are made orthogonal, of
RMS 1, and the output layer maps each of them to the logits of ``answer_logits`` (":" -> "0"
-> "." -> first decimal -> "8" -> second decimal -> "5" -> end). Randomly initialised
attention and MLP blocks (weights of s.d. 0.02) add little to those embeddings, so the last
token almost decides the next one; their output projections are multiplied by
``BLOCK_GAIN`` so that the image and the caption still move each pair's digit probabilities
(by about 1e-3 in the score, at most ``CONTEXT_EFFECT``): enough to make a batching or
padding mistake visible, too little to change the greedy answer.
"""

from pathlib import Path

FLOOR = -4.0  # logit of every token a step does not name
# The digit logits at the first and second decimal (greedy: 8, then 5).
FIRST_DECIMAL = {5: 1.0, 6: 1.5, 7: 2.5, 8: 3.0, 9: 2.0}
SECOND_DECIMAL = {0: 0.5, 4: 1.0, 5: 3.0, 6: 1.0}
BLOCK_GAIN = 10.0
CONTEXT_EFFECT = 0.02
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}{% endif %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] + ' '}}"
    "{% endfor %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)
CORPUS = (
    "A chat between a curious human and an artificial intelligence assistant. The assistant gives helpful, "
    "detailed, and polite answers to the human's questions. USER: ASSISTANT: Why? Tell me the reason.",
    "Your task is to evaluate and rate the candidate caption on a scale of 0.0 to 1.0 based on the given Grading "
    "Criteria. (Print Real Number Score ONLY) Grading Criteria: 0.0: The caption does not describe the image at "
    "all. 1.0: The caption accurately and clearly describes the image. Reference Captions: Candidate Caption: "
    "Caption: Score(Choose a rating from 0.0 to 1.0): 0123456789",
    "a dog runs on the beach near the sea, two people ride bicycles in a street at night, a bowl of fruit",
)
SPECIALS = ["<unk>", "<s>", "</s>", "<pad>", "<image>"]


def build_tokenizer(split_digits: bool = True):
    """A Llama-like byte-pair tokenizer trained on CORPUS; ``split_digits=False`` lets it merge
    digits ("85" one token), as tokenizers FLEUR cannot use do."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    steps = [pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never"), pre_tokenizers.Punctuation()]
    if split_digits:
        steps.append(pre_tokenizers.Digits(individual_digits=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    alphabet = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,:;!?()'\"-▁\n")
    corpus = CORPUS if split_digits else (*CORPUS, "0.85 0.85 0.85 85 85")
    trainer = trainers.BpeTrainer(vocab_size=320, special_tokens=SPECIALS, initial_alphabet=alphabet)
    tokenizer.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", unk_token="<unk>", pad_token="<pad>"
    )


def save_tiny_llava(directory: Path, *, answer: bool = True, seed: int = 0, split_digits: bool = True) -> Path:
    import torch
    from transformers import (
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )
    from transformers.models.llava.image_processing_llava import LlavaImageProcessor

    tokenizer = build_tokenizer(split_digits)
    vision = CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=8
    )
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    config = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        image_seq_length=16,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    if answer:
        teach_answer(model, tokenizer)
    processor = LlavaProcessor(
        image_processor=LlavaImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
        tokenizer=tokenizer,
        patch_size=8,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    processor.save_pretrained(directory)
    return directory


def answer_logits(vocab_size: int, token_of) -> dict:
    """The designed logits after each answer token: {previous token: logits over the vocabulary}."""
    import torch

    def step(logits_of: dict[int, float]) -> torch.Tensor:
        row = torch.full((vocab_size,), FLOOR)
        for token, logit in logits_of.items():
            row[token] = logit
        return row

    digit = {d: token_of(str(d)) for d in range(10)}
    return {
        ":": step({digit[0]: 6.0}),
        "0": step({token_of("."): 6.0}),
        ".": step({digit[d]: logit for d, logit in FIRST_DECIMAL.items()}),
        "8": step({digit[d]: logit for d, logit in SECOND_DECIMAL.items()}),
        "5": step({token_of("</s>"): 6.0}),
    }


def teach_answer(model, tokenizer, gain: float = BLOCK_GAIN) -> None:
    """Set the weights that make ``model`` (a LLaVA over Llama, any size) answer "0.85" (module
    docstring); the blocks' output projections are multiplied by ``gain``."""
    import torch

    language = model.model.language_model
    width = language.config.hidden_size
    with torch.no_grad():
        for layer in language.layers:
            layer.self_attn.o_proj.weight.mul_(gain)
            layer.mlp.down_proj.weight.mul_(gain)
        steps = answer_logits(model.lm_head.weight.shape[0], tokenizer.convert_tokens_to_ids)
        generator = torch.Generator().manual_seed(1)
        directions, _ = torch.linalg.qr(torch.randn(width, len(steps), generator=generator))
        head = torch.zeros_like(model.lm_head.weight, dtype=torch.float32)
        directions = directions.to(head.device)
        for column, (token, logits) in enumerate(steps.items()):
            direction = directions[:, column]
            logits = logits.to(head.device)
            # RMS-normalised, sqrt(width) * a unit vector is itself: the final norm leaves it be.
            language.embed_tokens.weight[tokenizer.convert_tokens_to_ids(token)] = direction * width**0.5
            head += torch.outer(logits, direction) / width**0.5
        language.norm.weight.fill_(1.0)
        model.lm_head.weight.copy_(head)
