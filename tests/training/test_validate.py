"""`python -m training.validate` scores each folder by its own twin's loss, as training does, on the
same rows, in fp32 whatever the folder stores."""

import json

import pytest
import torch

from tests.sprout.helpers import corpus_texts, special_ids, tiny_sprout, tiny_tokenizer
from training.data import encode_texts
from training.losses import validation_loss
from training.validate import main


@pytest.fixture()
def folders(tmp_path):
    tok = tiny_tokenizer()
    out = {}
    for name, causal, dtype in (("ar", True, torch.float32), ("bd", False, torch.bfloat16)):
        model = tiny_sprout(causal, seed=1)
        model.to(dtype).save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
        out[name] = tmp_path / name
    corpus = tmp_path / "heldout.jsonl"
    corpus.write_text("".join(json.dumps({"text": t}) + "\n" for t in corpus_texts()[:12]))
    return out, corpus


def test_each_folder_is_scored_by_its_own_twins_validation_loss(folders, capsys):
    (models, corpus) = folders
    assert main(["--model", str(models["ar"]), "--model", str(models["bd"]), "--corpus", str(corpus),
                 "--rows", "10", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["rows"] == 10
    tok = tiny_tokenizer()
    examples = encode_texts(list(corpus_texts()[:10]), tok)
    for name, causal in (("ar", True), ("bd", False)):
        # the stored bf16 BD weights are read back in fp32: the loss of the model those weights make
        model = tiny_sprout(causal, seed=1) if causal else tiny_sprout(causal, seed=1).to(torch.bfloat16).float()
        with torch.no_grad():
            want = validation_loss(model, examples, special_ids(tok), "ar" if causal else "bd", 4096)
        assert got["losses"][str(models[name])]["heldout.jsonl"] == pytest.approx(want, abs=1e-5)
    ar_loss = got["losses"][str(models["ar"])]["heldout.jsonl"]
    bd_loss = got["losses"][str(models["bd"])]["heldout.jsonl"]
    assert ar_loss != bd_loss


def test_the_table_names_every_model_and_a_missing_folder_is_one_sentence(folders, capsys):
    (models, corpus) = folders
    assert main(["--model", str(models["ar"]), "--corpus", str(corpus), "--rows", "4"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "| model | heldout.jsonl |" and str(models["ar"]) in out
    with pytest.raises(SystemExit):
        main(["--model", str(models["ar"].parent / "nowhere"), "--corpus", str(corpus)])
    assert "not found:" in capsys.readouterr().err
