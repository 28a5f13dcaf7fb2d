"""Fine-tuning a (tiny, random) GPT-2 with Hugging Face transformers, with a label bug.

No download: the model is ``GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=32,
vocab_size=50))`` with random weights, standing in for a pretrained checkpoint. The
"corpus" is 320 token sequences of 10 to 16 tokens from a fixed rule (each token mostly
followed by one other), so there is something to learn. The collate function pads each
batch to its longest sequence, builds the attention mask, and sets the labels of padding
to -100, as the Hugging Face docs do.

The bug (an H2: the labels no longer belong to their inputs): to waste less padding,
the collate function sorts the examples by length, but it builds ``input_ids`` before
sorting and ``labels`` after. Rows of a batch are then paired with another row's labels.
``Gpt2FineTune(fixed=True)`` sorts first, then builds both.

    python examples/gpt2_finetune.py
    labkit triage --setup examples/gpt2_finetune.py:Gpt2FineTune
"""

from __future__ import annotations

import time

import torch

import labkit

VOCAB, PAD, BATCH_SIZE = 50, 0, 16


def make_corpus(n=320, seed=5):
    gen = torch.Generator().manual_seed(seed)
    follow = 1 + torch.randperm(VOCAB - 1, generator=gen)  # token t is mostly followed by follow[t]
    corpus = []
    for _ in range(n):
        length = int(torch.randint(10, 17, (1,), generator=gen))
        seq = [int(torch.randint(1, VOCAB, (1,), generator=gen))]
        for _ in range(length - 1):
            nxt = (
                follow[seq[-1] - 1]
                if torch.rand(1, generator=gen) < 0.9
                else torch.randint(1, VOCAB, (1,), generator=gen)
            )
            seq.append(int(nxt))
        corpus.append(seq)
    return corpus


def pad(rows, value):
    width = max(len(r) for r in rows)
    return torch.tensor([r + [value] * (width - len(r)) for r in rows])  # (B, T)


def collate(examples, fixed):
    if fixed:
        examples = sorted(examples, key=len)
    input_ids = pad(examples, PAD)
    attention_mask = pad([[1] * len(e) for e in examples], 0)
    if not fixed:
        examples = sorted(examples, key=len)  # BUG: sorted after input_ids were built
    labels = pad(examples, -100)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


class Gpt2FineTune:
    def __init__(self, fixed: bool = False):
        self.fixed = fixed
        self.corpus = make_corpus()

    def make_model(self, seed):
        from transformers import GPT2Config, GPT2LMHeadModel

        torch.manual_seed(seed)
        config = GPT2Config(
            n_layer=2,
            n_head=2,
            n_embd=32,
            vocab_size=VOCAB,
            n_positions=32,
            pad_token_id=PAD,
            bos_token_id=None,
            eos_token_id=None,
        )
        return GPT2LMHeadModel(config)

    def make_optimizer(self, model):
        return torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

    def batches(self, seed):
        order = torch.randperm(
            len(self.corpus), generator=torch.Generator().manual_seed(seed)
        ).tolist()
        return [
            collate([self.corpus[i] for i in order[k : k + BATCH_SIZE]], self.fixed)
            for k in range(0, len(order), BATCH_SIZE)
        ]

    def loss_fn(self, model, batch):
        return model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            labels=batch["labels"],
        ).loss

    def train(self, seed, epochs):
        started = time.time()
        model = self.make_model(seed)
        optimizer = self.make_optimizer(model)
        model.train()
        log = {"step": [], "loss_raw": [], "loss_reported": []}
        for epoch in range(epochs):
            total = 0.0
            for i, batch in enumerate(self.batches(seed + epoch)):
                out = model(**batch)
                out.loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()
                total += out.loss.item()
                log["step"].append(len(log["step"]))
                log["loss_raw"].append(out.loss.item())
                log["loss_reported"].append(total / (i + 1))
        return labkit.Run.from_log(log, seed=seed, started_at=started)


if __name__ == "__main__":
    print(labkit.diagnose(Gpt2FineTune(), seeds=(0, 1)))
