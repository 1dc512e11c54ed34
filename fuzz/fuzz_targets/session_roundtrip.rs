#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pi_engine::__fuzz::session_roundtrip(data);
});
