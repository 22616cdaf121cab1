//! Builds `bpf/classify.bpf.c`, and generates `$OUT_DIR/classify_layout.rs`
//! from `bpf/classify.h` (`detpath_bpf_build::layout_checks`): clang (the compiler of the BPF side) dumps the
//! layout of every `struct cls_*` it defines, and each becomes a macro
//! `check_<struct>!(RustType)` of compile-time assertions (size, alignment
//! and the offset of every field, by its C name). `src/maps.rs` invokes them
//! on its `#[repr(C)]` mirrors, so a header change that the mirrors do not
//! follow fails the build. The header's `#define CLS_*` numbers become
//! constants too.

fn main() {
    detpath_bpf_build::compile("classify");
    detpath_bpf_build::layout_checks(&["classify.h"], "cls_", "classify_layout.rs");
}
