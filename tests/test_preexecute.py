"""The pre-executor fails a page whose cells write to stderr (a warning, or a kernel's own fault)."""

import nbformat

from aiinfra_build.preexecute import stderr_text


def _nb(*outputs):
    cell = nbformat.v4.new_code_cell("x = 1")
    cell.outputs = [nbformat.v4.new_output(**o) for o in outputs]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# t"), cell])


def test_a_page_that_writes_nothing_to_stderr_passes():
    assert stderr_text(_nb(dict(output_type="stream", name="stdout", text="fine\n"))) is None
    assert stderr_text(_nb()) is None


def test_a_kernel_fault_left_in_a_cell_fails_the_page():
    nb = _nb(
        dict(output_type="stream", name="stdout", text="ok\n"),
        dict(output_type="stream", name="stderr", text="ValueError: DELIM not in msg_list\n"),
    )
    assert stderr_text(nb) == "a cell wrote to stderr:\nValueError: DELIM not in msg_list\n"
