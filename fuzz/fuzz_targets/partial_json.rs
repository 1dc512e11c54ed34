#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pi_engine::__fuzz::partial_json(data);
});
