fn main() {
    detpath_bpf_build::compile("ktrace");
}
