#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    pi_engine::__fuzz::decoder(pi_engine::__fuzz::Api::Bedrock, data);
});
