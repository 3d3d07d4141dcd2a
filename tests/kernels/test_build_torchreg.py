"""TORCH_LIBRARY registrations read from C++ and guards computed for excluded ops (values)."""

from __future__ import annotations

import pytest
from wh.errors import BuildError
from wh.kernels.torchreg import (
    active_ops,
    defined_functions,
    plan_guards,
    statements,
    unresolved,
)

EXT = """\
#include <torch/library.h>
// m.def("commented_out", &commented_out);
TORCH_LIBRARY_FRAGMENT(sgl_kernel, m) {
  m.def("plain", &plain);
  m.def(
      "split(Tensor a, "
      "int b) -> ()");
  m.impl("split", torch::kCUDA, &split);
  /* m.def("in_block_comment", &x); */
  m.def("nested(Tensor[] a, (int, int) b) -> ()", {at::Tag::needs_fixed_stride_order});
  m.impl("nested", torch::kCUDA, &ns::nested_impl);
  m.def("es_grouped_mm(Tensor a) -> ()");
  m.impl("es_grouped_mm", &es_grouped_mm);
  m.def("grouped_mm(Tensor a) -> ()");
  m.impl("grouped_mm", torch::kCUDA, &grouped_mm);
  m.def("fn_macro", TORCH_FN(fn_macro));
  m.def("text_with_semicolon(str s=\\";\\") -> ()");
  m.impl("text_with_semicolon", torch::kCPU, &text_with_semicolon);
}

TORCH_LIBRARY_IMPL(sgl_kernel, CUDA, k) {
  k.impl("late", &late);
}
"""

SOURCES = {
    "a.cu": "void plain() {}\nvoid split(at::Tensor a,\n    int64_t b) {\n}\n",
    "grouped.cu": "void grouped_mm(torch::Tensor a) { }\n",
    "es.cu": "void es_grouped_mm(torch::Tensor a) { }\nvoid grouped_mm(torch::Tensor a);\n",
    "n.cu": "namespace ns {\nstd::vector<at::Tensor> nested_impl(\n    at::Tensor a) {\n}\n}\n",
    "late.cu": "void late() {}\nvoid fn_macro() {}\nvoid text_with_semicolon() {}\n",
}


def test_statements_across_lines_split_literals_nested_parens_and_comments() -> None:
    got = [(s.kind, s.op, s.symbols) for s in statements(EXT)]
    assert got == [
        ("def", "plain", ("plain",)),
        ("def", "split", ()),
        ("impl", "split", ("split",)),
        ("def", "nested", ()),
        ("impl", "nested", ("nested_impl",)),
        ("def", "es_grouped_mm", ()),
        ("impl", "es_grouped_mm", ("es_grouped_mm",)),
        ("def", "grouped_mm", ()),
        ("impl", "grouped_mm", ("grouped_mm",)),
        ("def", "fn_macro", ("fn_macro",)),
        ("def", "text_with_semicolon", ()),
        ("impl", "text_with_semicolon", ("text_with_semicolon",)),
        ("impl", "late", ("late",)),
    ]


def test_definitions_not_declarations() -> None:
    assert defined_functions(SOURCES["es.cu"]) == {"es_grouped_mm"}
    assert defined_functions(SOURCES["n.cu"]) == {"nested_impl"}
    assert "split" in defined_functions(SOURCES["a.cu"])


def test_guards_wrap_exactly_the_excluded_ops_and_nothing_else_moves() -> None:
    plan = plan_guards(EXT, SOURCES, {"grouped.cu": "_MSC_VER", "a.cu": "_WIN32"})
    assert dict(plan.guarded) == {"grouped_mm": "_MSC_VER", "plain": "_WIN32", "split": "_WIN32"}
    assert "es_grouped_mm" not in plan.guarded  # a near name is another op in another file
    removed = [ln for ln in plan.text.splitlines() if ln not in EXT.splitlines()]
    assert all(ln.startswith(("#ifndef", "#endif")) for ln in removed)
    assert [ln for ln in plan.text.splitlines() if not ln.startswith(("#ifndef", "#endif"))] == (
        EXT.splitlines()
    )
    assert plan.text.count("#ifndef _WIN32") == 1  # plain + split: one run
    everything = set(active_ops(EXT, {}))
    assert set(active_ops(plan.text, {})) == everything
    win = set(active_ops(plan.text, {"_WIN32": "1", "_MSC_VER": "1940"}))
    assert everything - win == {"grouped_mm", "plain", "split"}
    mingw = set(active_ops(plan.text, {"_WIN32": "1"}))
    assert everything - mingw == {"plain", "split"}
    again = plan_guards(plan.text, SOURCES, {"grouped.cu": "_MSC_VER", "a.cu": "_WIN32"})
    assert again.text == plan.text and set(again.already) == {"grouped_mm", "plain", "split"}


def test_unresolved_ops_are_the_ones_left_registered_without_their_file() -> None:
    compiled = {"a.cu", "es.cu", "n.cu", "late.cu"}
    assert unresolved(EXT, {}, SOURCES, compiled) == [
        "grouped_mm (implemented in grouped.cu, which is not compiled)"
    ]
    plan = plan_guards(EXT, SOURCES, {"grouped.cu": "_MSC_VER"})
    assert unresolved(plan.text, {"_MSC_VER": "1940"}, SOURCES, compiled) == []
    assert unresolved(plan.text, {}, SOURCES, compiled) != []  # on gcc it would not link


def test_an_op_split_between_conditions_is_refused() -> None:
    src = {"x.cu": "void plain() {}\n", "y.cu": "void plain() {}\n"}
    with pytest.raises(BuildError, match="excluded under different conditions"):
        plan_guards(EXT, src, {"x.cu": "_WIN32", "y.cu": "_MSC_VER"})


def test_a_file_without_registrations_is_refused() -> None:
    with pytest.raises(BuildError, match="no TORCH_LIBRARY"):
        plan_guards("int main() {}\n", SOURCES, {"a.cu": "_WIN32"}, "csrc/ext.cc")
