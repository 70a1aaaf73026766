"""The tutorial's own agent (docs/tutorial.md) runs as written: its `my_agents.py` saved in a fresh
directory, its commands run there (with `.venv` linked to the project's), and its Python snippet
run in the project root."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_examples() -> dict[str, str]:
    """Code blocks marked `<!-- readme-example: NAME -->` in the tutorial, by name."""
    text = (ROOT / "docs" / "tutorial.md").read_text()
    return dict(re.findall(r"<!-- readme-example: (\S+) -->\n```\w+\n(.*?)```", text, flags=re.S))


def test_bring_your_own_agent_runs_as_written(tmp_path):
    examples = readme_examples()
    assert set(examples) >= {"my_agents.py", "commands", "python"}
    (tmp_path / "my_agents.py").write_text(examples["my_agents.py"])
    (tmp_path / ".venv").symlink_to(Path(sys.executable).resolve().parent.parent
                                    if not (ROOT / ".venv").exists() else ROOT / ".venv")
    done = subprocess.run(["bash", "-ec", examples["commands"]], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    # each group's Υ, then its 95% CI (its behaviours' own are on the indented lines under it)
    upsilons = [float(u) for u in re.findall(r"^\S.*?([+-]\d\.\d{4})\s+\[", done.stdout, re.M)]
    assert len(upsilons) == 3 and all(u > 0.3 for u in upsilons), done.stdout  # all well above random's 0
    script = subprocess.run([sys.executable, "-c", examples["python"]], cwd=ROOT, capture_output=True, text=True,
                            timeout=600)
    assert script.returncode == 0, script.stderr
    assert float(script.stdout.strip()) > 0.3
