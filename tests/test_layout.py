"""The package's layout: the weight readers stay free of plotting."""
import subprocess
import sys


def test_importing_the_weight_readers_does_not_import_matplotlib():
    code = ("import sys, beforeqkv.pretrained, beforeqkv.pretrained.minilm, beforeqkv.pretrained.smollm2; "
            "print('matplotlib' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_no_module_under_pretrained_imports_matplotlib():
    from pathlib import Path

    import beforeqkv.pretrained as pretrained
    for path in Path(pretrained.__file__).parent.glob("*.py"):
        assert "matplotlib" not in path.read_text(), path.name
