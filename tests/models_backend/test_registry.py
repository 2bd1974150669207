import pytest
from conftest import build_bert_classifier, build_bert_encoder, build_unli_regressor

from models_backend import checkpoint_spec
from models_backend.registry import ModelError, ModelKind, enc_indices, inspect_checkpoint


def test_detects_kinds_from_config(tiny_nli, tiny_lm, tmp_path):
    assert inspect_checkpoint(tiny_nli).kind is ModelKind.NLI
    assert inspect_checkpoint(tiny_nli).label_names == ("entailment", "neutral", "contradiction")
    assert inspect_checkpoint(tiny_lm).kind is ModelKind.CAUSAL_LM
    build_unli_regressor(tmp_path / "unli")
    spec = inspect_checkpoint(tmp_path / "unli")
    assert spec.kind is ModelKind.UNLI and spec.sigmoid
    build_bert_classifier(tmp_path / "defeasible", num_labels=2, id2label={0: "weakener", 1: "strengthener"})
    assert inspect_checkpoint(tmp_path / "defeasible").kind is ModelKind.DEFEASIBLE


def test_explicit_kind_is_checked(tiny_nli, tiny_lm, tmp_path):
    build_bert_classifier(tmp_path / "two", num_labels=2, id2label={0: "LABEL_0", 1: "LABEL_1"})
    with pytest.raises(ModelError, match="cannot tell its kind"):
        inspect_checkpoint(tmp_path / "two")
    assert inspect_checkpoint(tmp_path / "two", "defeasible").kind is ModelKind.DEFEASIBLE
    with pytest.raises(ModelError, match="2 output labels do not fit a nli model"):
        inspect_checkpoint(tmp_path / "two", "nli")
    with pytest.raises(ModelError, match="not a causal LM"):
        inspect_checkpoint(tiny_nli, ModelKind.CAUSAL_LM)
    with pytest.raises(ModelError, match="no sequence classification head"):
        inspect_checkpoint(tiny_lm, ModelKind.NLI)


def test_missing_and_broken_folders_name_the_folder(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(ModelError, match=f"{missing} does not exist"):
        inspect_checkpoint(missing)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelError, match=f"{empty} has no config.json"):
        inspect_checkpoint(empty)
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ModelError, match=f"{broken}: config.json cannot be read"):
        inspect_checkpoint(broken)


def test_encoder_without_head_is_incompatible(tmp_path):
    folder = build_bert_encoder(tmp_path / "encoder")
    with pytest.raises(ModelError, match="cannot tell its kind"):
        inspect_checkpoint(folder)
    with pytest.raises(ModelError, match="no sequence classification head"):
        inspect_checkpoint(folder, "nli")


def test_enc_indices_follow_label_names(tmp_path):
    build_bert_classifier(tmp_path / "shuffled", id2label={0: "CONTRADICTION", 1: "entailment", 2: "Neutral"})
    assert enc_indices(inspect_checkpoint(tmp_path / "shuffled")) == [1, 2, 0]
    build_bert_classifier(tmp_path / "generic", id2label={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(ModelError, match="do not name 'entailment'"):
        enc_indices(inspect_checkpoint(tmp_path / "generic"))


def test_config_json_is_read_as_transformers_reads_it(tiny_nli, tiny_lm, tmp_path):
    """The checkpoint's fields come from config.json alone (no torch or transformers to list checkpoints);
    they must be what transformers' own config gives."""
    import json

    from transformers import AutoConfig

    build_bert_classifier(tmp_path / "unli", num_labels=1, id2label={0: "probability"})
    build_bert_encoder(tmp_path / "encoder")
    plain = tmp_path / "plain"
    build_bert_classifier(plain)
    config = json.loads((plain / "config.json").read_text())
    del config["id2label"], config["label2id"]  # no label map: transformers' default of 2 labels
    (plain / "config.json").write_text(json.dumps(config))
    for folder in (tiny_nli, tiny_lm, tmp_path / "unli", tmp_path / "encoder", plain):
        theirs = AutoConfig.from_pretrained(folder, local_files_only=True)
        ours = checkpoint_spec._read_config(folder / "config.json")
        assert ours.num_labels == theirs.num_labels, folder
        assert checkpoint_spec._label_names(ours) == checkpoint_spec._label_names(theirs), folder
        assert list(ours.architectures or []) == list(theirs.architectures or []), folder


def test_listing_a_checkpoint_loads_neither_torch_nor_transformers(tiny_nli, tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    probe = (
        "import json, sys, django; django.setup(); from pathlib import Path; "
        "from models_backend.catalog import describe; "
        f"found = describe('shared/tiny', Path({str(tiny_nli)!r}), 'here'); "
        "print(json.dumps([found.kind, sorted({'torch', 'transformers'} & set(sys.modules))]))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "NLI_STUDIO_VAR": str(tmp_path), "DEBUG": "true"}
    repo = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == ["nli", []]
