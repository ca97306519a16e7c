//! The HTML pages of `plot` and `reproduce` in a real browser: Debian's chromium,
//! headless, renders the page (its DOM holds the figures) and its screenshot is not
//! blank. Behind OLTPSCOPE_BROWSER_TESTS=1 (install chromium with
//! scripts/install-chromium.sh).

use crate::common;
use common::oltpscope;

use std::path::Path;
use std::process::Command;

fn wanted() -> bool {
    if std::env::var("OLTPSCOPE_BROWSER_TESTS").as_deref() != Ok("1") {
        eprintln!("skipped: set OLTPSCOPE_BROWSER_TESTS=1 (and run scripts/install-chromium.sh)");
        return false;
    }
    true
}

/// chromium headless on `page` with `args`: its standard output.
fn chromium(page: &Path, args: &[&str], profile: &Path) -> String {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs (scripts/install-chromium.sh installs it)");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Distinct colours in the screenshot and the share of non-white pixels.
fn screenshot_ink(png_path: &Path) -> (usize, f64) {
    let dec = png::Decoder::new(std::fs::File::open(png_path).expect("the screenshot exists"));
    let mut r = dec.read_info().expect("a PNG");
    let mut buf = vec![0; r.output_buffer_size()];
    let info = r.next_frame(&mut buf).expect("a frame");
    let px = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        c => panic!("unexpected colour type {c:?}"),
    };
    let data = &buf[..info.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let mut ink = 0usize;
    let n = data.len() / px;
    for p in data.chunks(px) {
        colours.insert((p[0], p[1], p[2]));
        if p[0] < 240 || p[1] < 240 || p[2] < 240 {
            ink += 1;
        }
    }
    (colours.len(), ink as f64 / n as f64)
}

fn check_page(page: &Path, min_svgs: usize, must: &[&str]) {
    let d = tempfile::tempdir().unwrap();
    let dom = chromium(page, &["--dump-dom"], d.path());
    let doc = dom.to_lowercase();
    assert!(
        doc.matches("<svg").count() >= min_svgs,
        "the rendered DOM has fewer than {min_svgs} figures"
    );
    for m in must {
        assert!(dom.contains(m), "the rendered DOM lacks {m}");
    }
    let shot = d.path().join("shot.png");
    chromium(
        page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1200,2400",
            "--hide-scrollbars",
        ],
        d.path(),
    );
    let (colours, ink) = screenshot_ink(&shot);
    assert!(colours > 8, "the screenshot has {colours} colours: blank");
    assert!(
        ink > 0.01,
        "only {:.2}% of the screenshot is drawn",
        100.0 * ink
    );
}

#[test]
fn a_sweep_page_renders_with_its_figures_and_table() {
    if !wanted() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("s");
    let o = dir.to_str().unwrap();
    let (code, out, err) = oltpscope(&[
        "sweep",
        "micro",
        "--vary",
        "engine=disk,memory",
        "--vary",
        "size=64KB,256KB,1MB",
        "--out",
        o,
        "--txns",
        "200",
        "--warmup",
        "0",
        "--no-check",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let (code, _, err) = oltpscope(&["plot", o]);
    assert_eq!(code, 0, "{err}");
    check_page(&dir.join("index.html"), 2, &["class=\"norm\"", "knee"]);
}

#[test]
fn a_reproduce_page_renders_with_its_tables_and_findings() {
    if !wanted() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("r");
    let (code, out, err) = oltpscope(&[
        "reproduce",
        "revisited",
        "--tiny",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    check_page(
        &dir.join("index.html"),
        0,
        &["class=\"findings\"", "Table 2"],
    );
    check_page(&dir.join("size").join("index.html"), 1, &["class=\"norm\""]);
}
