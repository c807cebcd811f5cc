use proptest::prelude::*;
use serde_json::json;

use super::*;

fn parse_default(text: &str) -> Result<Vec<Document>, Error> {
    parse("f.yaml", text, &Limits::default())
}

#[test]
fn splits_documents_and_skips_empty_ones() {
    let docs = parse_default("a: 1\n---\n---\nkind: X\nmetadata: {name: n}\n").expect("parses");
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[1].index, 3);
    assert_eq!(docs[1].to_string(), "f.yaml document 3 (X n)");
}

#[test]
fn invalid_yaml_names_the_document() {
    let err = parse_default("a: 1\n---\nb: [\n").expect_err("must fail");
    assert!(
        err.to_string()
            .starts_with("f.yaml document 2: invalid YAML"),
        "{err}"
    );
    let err = parse_default("- 1\n").expect_err("must fail");
    assert!(err.to_string().contains("expected a mapping"), "{err}");
}

#[test]
fn split_cuts_at_markers_only() {
    // (case, text, pieces)
    let cases: &[(&str, &str, &[&str])] = &[
        ("one bare document", "a: 1\n", &["a: 1\n"]),
        ("leading marker", "---\na: 1\n", &["---\na: 1\n"]),
        (
            "comments and directives before the first marker belong to it",
            "# c\n%YAML 1.2\n---\na: 1\n",
            &["# c\n%YAML 1.2\n---\na: 1\n"],
        ),
        (
            "empty documents are kept so numbering matches the file",
            "a: 1\n---\n---\nb: 2\n",
            &["a: 1\n", "---\n", "---\nb: 2\n"],
        ),
        (
            "marker with content on its line",
            "--- |\n  text\n--- {a: 1}\n",
            &["--- |\n  text\n", "--- {a: 1}\n"],
        ),
        (
            "indented or longer dashes are content",
            "a: |\n  ---\n  x\nb: ----\n----\n",
            &["a: |\n  ---\n  x\nb: ----\n----\n"],
        ),
        (
            "end marker closes a document; trailing comments are no document",
            "a: 1\n...\n# bye\n",
            &["a: 1\n...\n"],
        ),
        (
            "a bare document after an end marker",
            "a: 1\n...\nb: 2\n",
            &["a: 1\n...\n", "b: 2\n"],
        ),
        (
            "CRLF line ends",
            "a: 1\r\n---\r\nb: 2\r\n",
            &["a: 1\r\n", "---\r\nb: 2\r\n"],
        ),
        ("nothing", "", &[]),
        ("only comments", "# a\n\n# b", &[]),
    ];
    for (case, text, want) in cases {
        assert_eq!(split(text), *want, "{case}");
    }
}

#[test]
fn documents_over_the_size_limit_are_refused_by_position() {
    let limits = Limits {
        max_document_bytes: 64,
        ..Limits::default()
    };
    let small = "kind: X\nmetadata: {name: a}\n";
    let big = format!("kind: X\nmetadata: {{name: b}}\ndata: {}\n", "x".repeat(64));
    let text = format!("{small}---\n{big}");
    let err = parse("f.yaml", &text, &limits).expect_err("must fail");
    let message = err.to_string();
    assert!(
        message.starts_with("f.yaml document 2: ")
            && message.contains("limit of 64 bytes per document")
            && message.contains(MAX_DOCUMENT_BYTES_VAR),
        "{message}"
    );
    assert_eq!(parse("f.yaml", small, &limits).expect("fits").len(), 1);
}

#[test]
fn input_over_the_budget_is_refused_before_it_is_all_read() {
    let mut budget = 10;
    let err =
        read_limited("x".repeat(11).as_bytes(), "big.yaml", &mut budget).expect_err("must fail");
    assert!(
        err.to_string()
            .starts_with("big.yaml: the input is more than the limit of 10 bytes"),
        "{err}"
    );
    let mut budget = 10;
    assert_eq!(
        read_limited("abcdef".as_bytes(), "a", &mut budget).expect("fits"),
        "abcdef"
    );
    assert_eq!(budget, 4, "what was read is taken off the budget");
    assert!(read_limited("abcde".as_bytes(), "b", &mut budget).is_err());
}

#[test]
fn deep_nesting_is_refused_with_the_field_that_goes_too_deep() {
    // (case, text, refused)
    let nested_flow = |levels: usize| format!("a: {}1{}\n", "[".repeat(levels), "]".repeat(levels));
    let cases: Vec<(&str, String, bool)> = vec![
        ("just inside the limit", nested_flow(MAX_DEPTH - 1), false),
        ("one level more", nested_flow(MAX_DEPTH), true),
        ("serde_yaml's own limit", nested_flow(200), true),
        ("ten thousand levels", nested_flow(10_000), true),
        (
            "a thousand block levels",
            (0..1_000)
                .map(|i| format!("{}k:\n", " ".repeat(i)))
                .collect(),
            true,
        ),
    ];
    for (case, text, refused) in cases {
        match parse_default(&text) {
            Ok(_) => assert!(!refused, "{case}: accepted"),
            Err(err) => {
                assert!(refused, "{case}: {err}");
                let message = err.to_string();
                assert!(
                    message.starts_with("f.yaml document 1: ")
                        && message.contains(&format!("more than {MAX_DEPTH} levels deep")),
                    "{case}: {message}"
                );
            }
        }
    }
    let err = parse_default(&nested_flow(MAX_DEPTH)).expect_err("too deep");
    assert!(
        err.to_string()
            .contains(": a[0][0][0][0][0][0][0]... nests"),
        "names the field: {err}"
    );
}

#[test]
fn alias_bombs_are_refused() {
    let mut text = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let names: Vec<char> = ('b'..='j').collect();
    let mut previous = 'a';
    for name in names {
        let refs = vec![format!("*{previous}"); 9].join(",");
        text.push_str(&format!("{name}: &{name} [{refs}]\n"));
        previous = name;
    }
    let err = parse_default(&text).expect_err("billion laughs");
    let message = err.to_string();
    assert!(
        message.starts_with("f.yaml document 1: invalid YAML: ")
            && message.contains("billion laughs"),
        "{message}"
    );
    // One wide anchor named many times: within serde_yaml's limit on aliases followed, refused
    // by the budget on what they expand to.
    let wide: Vec<String> = (0..10_000).map(|i| format!("v{i}")).collect();
    let text = format!(
        "w: &w [{}]\nmany: [{}]\n",
        wide.join(", "),
        vec!["*w"; 10_000].join(", ")
    );
    let err = parse_default(&text).expect_err("a hundred million values");
    assert!(
        err.to_string()
            .starts_with("f.yaml document 1: invalid YAML: many[")
            && err
                .to_string()
                .contains("aliases expand the document beyond its size limit"),
        "{err}"
    );
    // Aliases within reason still work.
    let docs = parse_default("a: &x {k: v}\nb: *x\n").expect("parses");
    assert_eq!(docs[0].value, json!({"a": {"k": "v"}, "b": {"k": "v"}}));
}

#[test]
fn limits_come_from_their_variables() {
    // (value, parsed)
    let cases = [
        (None, Some(7)),
        (Some("10"), Some(10)),
        (Some(" 42 "), Some(42)),
        (Some("0"), None),
        (Some("-1"), None),
        (Some("1MiB"), None),
        (Some(""), None),
    ];
    for (value, want) in cases {
        let got = limit(MAX_DOCUMENT_BYTES_VAR, value, 7);
        match (got, want) {
            (Ok(n), Some(w)) => assert_eq!(n, w, "{value:?}"),
            (Err(e), None) => assert!(
                e.to_string().starts_with("KRATIX_MAX_DOCUMENT_BYTES="),
                "{e}"
            ),
            (got, want) => panic!("{value:?}: got {got:?}, want {want:?}"),
        }
    }
}

/// JSON values that YAML can represent exactly (no floats: their text form may change).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[ -~]{0,12}".prop_map(Value::String),
        "[a-z #:\\-\n]{0,24}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z][a-z0-9-]{0,7}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z][a-zA-Z0-9]{0,7}", json_value(), 1..5)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        if std::env::var_os("KRATIX_LONG_TESTS").is_some() { 5000 } else { 256 }
    ))]

    #[test]
    fn parse_never_panics_on_any_text(text in any::<String>()) {
        let _ = parse_default(&text);
    }

    #[test]
    fn parse_never_panics_on_yaml_like_text(text in "([a-z0-9 ]|-|\\.|:|\\[|\\]|\\{|\\}|#|&|\\*|!|\\||>|'|\"|%|@|,|\\?|\n|\t){0,200}") {
        let _ = parse_default(&text);
    }

    #[test]
    fn split_pieces_are_the_text_in_order(text in "((---|\\.\\.\\.|# c|%Y|a: 1| |x)(\n|\r\n| ))*") {
        let pieces = split(&text);
        let joined = pieces.concat();
        prop_assert!(text.starts_with(&joined));
        // Whatever is left after the last piece holds no content.
        for line in text[joined.len()..].lines() {
            let t = line.trim_start();
            prop_assert!(t.is_empty() || t.starts_with('#') || line.starts_with('%'), "{line:?}");
        }
    }

    #[test]
    fn documents_round_trip_through_a_stream(
        objects in prop::collection::vec(json_object(), 0..6),
        leading_marker in any::<bool>(),
        empty_between in any::<bool>(),
    ) {
        let mut text = String::new();
        if leading_marker {
            text.push_str("# a stream\n---\n");
        }
        let texts: Vec<String> = objects
            .iter()
            .map(|o| serde_yaml::to_string(o).expect("JSON serializes as YAML"))
            .collect();
        let separator = if empty_between { "---\n---\n" } else { "---\n" };
        text.push_str(&texts.join(separator));
        let docs = parse_default(&text).expect("a stream of objects parses");
        let values: Vec<Value> = docs.iter().map(|d| d.value.clone()).collect();
        prop_assert_eq!(&values, &objects);
        let step = if empty_between { 2 } else { 1 };
        let indexes: Vec<usize> = docs.iter().map(|d| d.index).collect();
        let want: Vec<usize> = (0..objects.len()).map(|i| 1 + i * step).collect();
        prop_assert_eq!(indexes, want);
    }
}
