"""Small torch.multisite runs: parameters for runs of about a second on a CPU."""

SMALL = {
    "useful_tokens": 12288,
    "micro_batch": 64,
    "train_tokens": 16384,
    "heldout_tokens": 2048,
    "checkpoint_every_steps": 8,
    "width": 64,
}
