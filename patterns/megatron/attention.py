"""Megatron-LM's attention arguments: GQA or MLA projections and the attention output gate.

MLA is read only when ``multi_latent_attention`` is True: its arguments carry defaults in every
Megatron-LM run (``kv_lora_rank=32``, ...), and reading them without the flag is the slime bug.
"""

import attrs

from flopsreg.plugin import MegatronReader, ModelError, hookimpl

# Megatron-LM's MLA arguments and the parameters of the MLA patterns they fill.
MLA_ARGUMENTS = {
    "kv_lora_rank": "kv_lora_rank",
    "qk_head_dim": "qk_nope_head_dim",
    "qk_pos_emb_head_dim": "qk_rope_head_dim",
    "v_head_dim": "v_head_dim",
}
# kv_channels under MLA: the head width of a hybrid stack's '*' layers (SelfAttention beside MLA
# arguments); the hybrid reader drops it where no such layer runs.
MLA_HEAD_DIM = "head_dim"


def _mla(args, params: dict, flags: set) -> None:
    if args.flag("group_query_attention"):
        raise ModelError("args.group_query_attention = True: Megatron-LM does not combine it with multi_latent_attention")
    flags.add("mla")
    for argument, param in MLA_ARGUMENTS.items():
        params[param] = args.int(argument, " (needed with multi_latent_attention)")
    if args.get("q_lora_rank") is not None:
        flags.add("q_lora")
        params["q_lora_rank"] = args.int("q_lora_rank")
    kv_channels = args.optional_int("kv_channels")
    params[MLA_HEAD_DIM] = params["hidden"] // params["heads"] if kv_channels is None else kv_channels


def _gqa(args, params: dict, flags: set) -> None:
    """``kv_heads`` as Megatron-LM runs them, and the flag and argument slime reads instead.

    Without ``group_query_attention`` Megatron-LM runs MHA (its FLOPs function even overwrites
    ``args.num_query_groups`` with the head count), but slime reads ``args.num_query_groups`` as
    given: its argparse default 1 on MHA runs. That value is kept for the slime convention only.
    """
    hidden, heads = params["hidden"], params["heads"]
    kv_channels = args.optional_int("kv_channels")
    params["head_dim"] = hidden // heads if kv_channels is None else kv_channels
    groups = args.optional_int("num_query_groups")
    if args.flag("group_query_attention"):
        params["kv_heads"] = heads if groups is None else groups
        return
    params["kv_heads"] = heads
    flags.add("megatron_mha")
    if groups is not None:
        params["num_query_groups"] = groups


def read(args, decoder):
    """The projection geometry and the output gate."""
    params, flags = dict(decoder.params), set(decoder.flags)
    (_mla if args.flag("multi_latent_attention") else _gqa)(args, params, flags)
    if args.flag("attention_output_gate"):
        flags.add("output_gate")
    return attrs.evolve(decoder, params=params, flags=flags)


ATTENTION = MegatronReader(
    name="attention",
    arguments=(
        "multi_latent_attention", "group_query_attention", "num_query_groups", "kv_channels",
        *MLA_ARGUMENTS, "q_lora_rank", "attention_output_gate",
    ),
    read=read,
    precedence=10,
    summary="GQA (kv_channels, num_query_groups) or, with multi_latent_attention, MLA dimensions; attention_output_gate",
)


@hookimpl
def flopsreg_register_megatron_readers():
    return [ATTENTION]
