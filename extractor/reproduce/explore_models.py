# Explore's tiny models: the config.json of five small architectures a `model` argument may name, so that a
# ModelConfig builds with no download; written once into folders by the child, and by each program that names one.
# The standard library only (runs in the runtime, beside child.py).
from __future__ import annotations

import ast
import importlib
import json
import os
from typing import Any

if __package__:  # imported as part of the extractor
    from extractor.reproduce import programs
else:  # run beside child.py in a runtime, from its folder
    programs = importlib.import_module("programs")

MODEL = "MODEL"  # the name of the (plain) tiny model folder in a program: written by the program's first lines
_LAYERS = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 2,
           "vocab_size": 1000}  # fmt: skip
# A generative model, an embedding (pooling) one, a mixture of experts, one with latent attention, and a hybrid of
# Mamba and attention layers (vLLM's own config class reads it: no transformers release needed).
TINY_MODELS: dict[str, dict[str, Any]] = {
    MODEL: {"architectures": ["LlamaForCausalLM"], "model_type": "llama", **_LAYERS, "num_key_value_heads": 2,
            "max_position_embeddings": 2048, "torch_dtype": "float32", "rms_norm_eps": 1e-5},
    "EMBEDDING_MODEL": {"architectures": ["BertModel"], "model_type": "bert", **_LAYERS,
                        "max_position_embeddings": 512},
    "MOE_MODEL": {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", **_LAYERS,
                  "num_key_value_heads": 2, "max_position_embeddings": 2048, "num_local_experts": 4,
                  "num_experts_per_tok": 2},
    "MLA_MODEL": {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", **_LAYERS,
                  "num_key_value_heads": 4, "moe_intermediate_size": 32, "max_position_embeddings": 2048,
                  "kv_lora_rank": 16, "q_lora_rank": None, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8,
                  "v_head_dim": 8, "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
                  "first_k_dense_replace": 1},
    "HYBRID_MODEL": {"architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", **_LAYERS,
                     "num_key_value_heads": 2, "head_dim": 16, "hybrid_override_pattern": "M*",
                     "max_position_embeddings": 2048, "torch_dtype": "float32", "ssm_state_size": 16,
                     "mamba_num_heads": 4, "mamba_n_groups": 1, "mamba_head_dim": 32, "mamba_chunk_size": 64},
}  # fmt: skip


def write_model(folder: str) -> str:
    """Write the tiny models' folders under `folder` (one per name, see TINY_MODELS)."""
    for name, config in TINY_MODELS.items():
        os.makedirs(os.path.join(folder, name), exist_ok=True)
        with open(os.path.join(folder, name, "config.json"), "w") as file:
            json.dump(config, file)
    return folder


def model_folders(folder: str) -> dict[str, str]:
    """Each tiny model's name -> its folder under `folder` (where write_model wrote it)."""
    return {name: os.path.join(folder, name) for name in TINY_MODELS}


def model_written(name: str) -> list[ast.stmt]:
    """The statements that write a tiny model's folder (its config.json only) into a temporary folder named `name`."""
    folder = ast.Name(name, ast.Load())
    opened = ast.Call(
        ast.Name("open", ast.Load()),
        [ast.Call(programs.dotted("os.path.join"), [folder, ast.Constant("config.json")], []), ast.Constant("w")],
        [],
    )
    dumped = ast.Call(
        programs.dotted("json.dump"), [programs.literal(TINY_MODELS[name]), ast.Name("file", ast.Load())], []
    )
    return [
        ast.Assign([ast.Name(name, ast.Store())], ast.Call(programs.dotted("tempfile.mkdtemp"), [], [])),
        ast.With([ast.withitem(opened, ast.Name("file", ast.Store()))], [ast.Expr(dumped)]),
    ]
