"""Execute a notebook top to bottom with nbclient and keep the executed copy (used on the GPU machine, where
there is no Jupyter server: `bash scripts/gpu_run.sh notebook`).

    python3 scripts/run_notebook.py notebooks/03_kernel_ladder.ipynb out.ipynb

Prints each cell's text output (streams and text/plain results, the last 25 lines of each) and the wall time;
exits 1 with the failing cell's error when a cell raises.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 scripts/run_notebook.py NOTEBOOK.ipynb EXECUTED.ipynb", file=sys.stderr)
        return 2
    import nbclient
    import nbformat

    source, target = Path(argv[0]), Path(argv[1])
    nb = nbformat.read(source, as_version=4)
    start = time.time()
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(source.parent)}})
    failed = ""
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as err:
        failed = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        text = []
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                text.append(out.get("text", ""))
            elif "text/plain" in out.get("data", {}):
                text.append(out["data"]["text/plain"])
            elif out.get("output_type") == "error":
                text.append(f"{out.get('ename')}: {out.get('evalue')}")
        lines = "".join(t if t.endswith("\n") else t + "\n" for t in text).splitlines()
        print(f"--- cell {i + 1}: {len(lines)} line(s) of text output")
        print("\n".join(lines[-25:]))
    verdict = f"FAILED: {failed}" if failed else "every cell ran"
    print(f"{source}: {verdict}; {time.time() - start:.0f} s; executed copy: {target}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
