//! Any bytes into the classifier's intent parser (the northbound API's
//! input): never a panic, and an accepted intent yields a rule-map entry
//! whose key has no bit outside its mask (the BPF lookup masks the frame's
//! key and compares it with the stored one, so a stray bit could never match).
#![no_main]

use detpath_classify::parse_intent;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(rule) = parse_intent(data) {
        let (key, mask) = rule.key_mask();
        for (k, m) in key.to_bytes().iter().zip(mask.to_bytes().iter()) {
            assert_eq!(k & !m, 0, "key bit outside the mask for {rule:?}");
        }
    }
});
