//! Fuzz target `media_pdf`: its body and limits are in butler_fuzz_targets (fuzz/targets.txt).
#![no_main]

#[global_allocator]
static ALLOC: butler_fuzz_targets::CappedAlloc = butler_fuzz_targets::CappedAlloc;

fn report(info: &std::panic::PanicHookInfo<'_>) {
    eprintln!("contained panic on the blocking pool: {info}");
}

libfuzzer_sys::fuzz_target!(init: butler_fuzz_targets::init("media_pdf", report), |data: &[u8]| {
    butler_fuzz_targets::run("media_pdf", data)
});
