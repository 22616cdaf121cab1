fn main() {
    // One object per program in bpf/; loaded with include_bytes! from OUT_DIR.
    for prog in ["xsk_redirect", "xdppoll", "xsk_stamp"] {
        if detpath_bpf_build::bpf_dir().join(format!("{prog}.bpf.c")).exists() {
            detpath_bpf_build::compile(prog);
        }
    }
    // Compile-time checks of the Rust mirrors in src/datapath/filter.rs.
    detpath_bpf_build::layout_checks(&["detpath_filter.h", "detpath_meta.h"], "dp_", "filter_layout.rs");
}
