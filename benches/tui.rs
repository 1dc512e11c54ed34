//! The terminal UI's frame cost: a 10,000-line transcript whose only change is the spinner
//! below it (the goal: computed and written in under 1 ms, under 100 bytes written), and the
//! same transcript with its last line growing as a streamed reply does.
//!
//! `cargo bench --features tui --bench tui`

use std::hint::black_box;
use std::io;

use criterion::{Criterion, criterion_group, criterion_main};
use pi_engine::tui::{Component, Container, ScreenMode, Terminal, Text, Tui};

/// A terminal that keeps nothing: what a frame costs without an emulator's parsing.
struct NullTerminal {
    bytes: usize,
}

impl Terminal for NullTerminal {
    fn size(&self) -> (usize, usize) {
        (120, 40)
    }
    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.bytes += bytes.len();
        Ok(())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The transcript (cached text blocks) and a spinner line below it.
struct View {
    transcript: Container,
    spinner: Text,
    frame: usize,
}

impl Component for View {
    fn render(&mut self, width: usize) -> Vec<String> {
        let mut lines = self.transcript.render(width);
        lines.extend(self.spinner.render(width));
        lines
    }
}

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

fn view() -> View {
    let mut transcript = Container::new();
    for i in 0..10_000 {
        transcript.push(Text::new(format!(
            "line {i}: the agent read a file, thought about it and wrote some text here"
        )));
    }
    View {
        transcript,
        spinner: Text::new("⠋ Working..."),
        frame: 0,
    }
}

fn bench(c: &mut Criterion) {
    let mut tui = Tui::new(NullTerminal { bytes: 0 }, view(), ScreenMode::Inline);
    tui.render_now().expect("first frame");
    let tick = |tui: &mut Tui<NullTerminal, View>| {
        let root = tui.root();
        root.frame = (root.frame + 1) % FRAMES.len();
        let text = format!("{} Working...", FRAMES[root.frame]);
        root.spinner.set_text(text);
        tui.render_now().expect("frame")
    };
    let stats = tick(&mut tui);
    eprintln!(
        "spinner frame over 10,000 lines: {} bytes written, {} rows",
        stats.bytes, stats.rows_written
    );
    c.bench_function("tui/spinner-frame-10k-lines", |b| {
        b.iter(|| black_box(tick(&mut tui)));
    });

    let mut tui = Tui::new(NullTerminal { bytes: 0 }, view(), ScreenMode::Inline);
    tui.render_now().expect("first frame");
    let mut reply = String::new();
    c.bench_function("tui/streamed-delta-frame-10k-lines", |b| {
        b.iter(|| {
            reply.push_str("word ");
            if reply.len() > 2000 {
                reply.clear();
            }
            let text = reply.clone();
            tui.root().spinner.set_text(text);
            black_box(tui.render_now().expect("frame"))
        });
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
