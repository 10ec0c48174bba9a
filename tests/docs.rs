//! The documentation's own checks: every relative link and anchor in the repository's Markdown
//! resolves (anchors as GitHub makes them from headings), ARCHITECTURE.md's generated module graph
//! is what `scripts/module-graph.py` gives today, and the README's quick start is what CI runs.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().expect("repo root")
}

/// Every `.md` file under `dir`, skipping hidden folders (`.git`, `.ci`) and build output.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && name != "target" && name != "node_modules" {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_FOOTNOTES | Options::ENABLE_STRIKETHROUGH
}

/// GitHub's anchor for a heading's text: lowercased, every character that is not a letter, a
/// digit, `-`, `_` or a space dropped, spaces turned into `-`.
fn slug(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings, with GitHub's `-1`, `-2` suffixes for repeats.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashSet::new();
    let mut heading: Option<String> = None;
    for event in Parser::new_ext(text, options()) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(heading.take().unwrap_or_default().trim());
                let n = seen.entry(base.clone()).or_insert(0);
                out.insert(if *n == 0 { base.clone() } else { format!("{base}-{n}") });
                *n += 1;
            }
            _ => {}
        }
    }
    out
}

/// The link and image destinations of a Markdown text.
fn links(text: &str) -> Vec<String> {
    Parser::new_ext(text, options())
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. }) | Event::Start(Tag::Image { dest_url, .. }) => {
                Some(dest_url.to_string())
            }
            _ => None,
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `base` joined with a relative path, `..` resolved lexically; `None` when it leaves `root`.
fn resolve(root: &Path, base: &Path, rel: &str) -> Option<PathBuf> {
    let start = if rel.starts_with('/') { root.to_path_buf() } else { base.to_path_buf() };
    let mut out = start;
    for c in Path::new(rel.trim_start_matches('/')).components() {
        match c {
            Component::ParentDir => {
                out.pop();
                if !out.starts_with(root) {
                    return None;
                }
            }
            Component::Normal(p) => out.push(p),
            _ => {}
        }
    }
    out.starts_with(root).then_some(out)
}

/// Whether a link leaves the repository (a URL with a scheme, or a protocol-relative one).
fn external(dest: &str) -> bool {
    dest.starts_with("//")
        || dest.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
}

#[test]
fn every_relative_link_and_anchor_in_the_markdown_resolves() {
    let root = root();
    let mut files = Vec::new();
    markdown_files(&root, &mut files);
    assert!(files.iter().any(|f| f.ends_with("README.md")), "no Markdown found under {}", root.display());
    let mut anchor_cache: HashMap<PathBuf, HashSet<String>> = HashMap::new();
    let mut anchors_of = |path: &Path| -> HashSet<String> {
        anchor_cache
            .entry(path.to_path_buf())
            .or_insert_with(|| anchors(&fs::read_to_string(path).unwrap_or_default()))
            .clone()
    };
    let (mut checked, mut broken) = (0, Vec::new());
    for file in &files {
        let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let shown = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        for dest in links(&text) {
            if external(&dest) {
                continue;
            }
            checked += 1;
            let (path, anchor) = match dest.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (dest.as_str(), None),
            };
            let path = percent_decode(path.split('?').next().unwrap_or(""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                match resolve(&root, file.parent().expect("a file's folder"), &path) {
                    Some(t) if t.exists() => t,
                    Some(_) => {
                        broken.push(format!("{shown}: `{dest}`: no such file"));
                        continue;
                    }
                    None => {
                        broken.push(format!("{shown}: `{dest}`: outside the repository"));
                        continue;
                    }
                }
            };
            let Some(anchor) = anchor.filter(|a| !a.is_empty()) else { continue };
            if target.extension().and_then(|e| e.to_str()) != Some("md") {
                continue; // line anchors into source files (#L10) are GitHub's, not the file's
            }
            let anchor = percent_decode(anchor);
            if !anchors_of(&target).contains(&anchor) {
                let in_file = target.strip_prefix(&root).unwrap_or(&target).display().to_string();
                broken.push(format!("{shown}: `{dest}`: no heading in {in_file} has the anchor #{anchor}"));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} relative links found in {} files: is the parser reading them?",
        files.len()
    );
    assert!(broken.is_empty(), "{} broken links of {checked}:\n{}", broken.len(), broken.join("\n"));
}

#[test]
fn anchors_are_githubs() {
    let text = "# Spork\n## Quick start\n## Serving (`spork serve`)\n## Many hosts: `spork worker`, Kubernetes\n\
                ## Quick start\n### The C ABI's cost\n";
    let a = anchors(text);
    for want in [
        "spork",
        "quick-start",
        "serving-spork-serve",
        "many-hosts-spork-worker-kubernetes",
        "quick-start-1",
        "the-c-abis-cost",
    ] {
        assert!(a.contains(want), "{want} not in {a:?}");
    }
    assert!(external("https://github.com/x") && external("mailto:a@b") && !external("docs/serving.md#x"));
}

#[test]
fn the_module_graph_in_architecture_md_is_current() {
    let root = root();
    let out = Command::new("python3")
        .current_dir(&root)
        .args(["scripts/module-graph.py", "--check", "ARCHITECTURE.md"])
        .output()
        .expect("python3 runs scripts/module-graph.py");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The README's quick start installs with the script CI runs, its test command is the one CI runs
/// last, and it stays a page a newcomer reads in a few minutes.
#[test]
fn the_readme_quick_start_is_what_ci_runs() {
    let root = root();
    let readme = fs::read_to_string(root.join("README.md")).expect("README.md");
    let ci = fs::read_to_string(root.join(".ci/run")).expect(".ci/run");
    assert!(
        ci.lines().any(|l| l.trim() == "scripts/setup-debian.sh"),
        ".ci/run must run scripts/setup-debian.sh"
    );
    assert!(!ci.contains("apt-get"), ".ci/run installs through scripts/setup-debian.sh only");
    let test_cmd = "cargo test --workspace --locked --all-features";
    let last = ci.lines().rev().find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
    assert_eq!(last.map(str::trim), Some(test_cmd), ".ci/run ends with the README's test command");
    for needle in ["scripts/setup-debian.sh", test_cmd, "cargo run --release -p spork -- demo"] {
        assert!(readme.contains(needle), "the README's quick start must show `{needle}`");
    }
    let n = readme.lines().count();
    assert!(n <= 260, "README.md is {n} lines: the manual is docs/, the README a five-minute read");
}
