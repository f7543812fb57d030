"""Read a vignette (a jupytext percent script) as a notebook for myst-nb."""

import jupytext

KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}


def read_vignette(text):
    """The notebook of a percent script, with each cell's title (``# %% Title``, which
    jupytext moves into the cell's metadata) kept as the first comment of its code, as
    the script reads."""
    nb = jupytext.reads(text, fmt="py:percent")
    nb.metadata["kernelspec"] = KERNEL
    for cell in nb.cells:
        title = cell.metadata.pop("title", None)
        if title and cell.cell_type == "code":
            cell.source = f"# {title}\n{cell.source}"
    return nb
