//! A [`Node`] tree as text (box-drawing or ASCII branches), Graphviz DOT or a Mermaid flowchart.

use std::fmt::Write;

use super::model::Node;

/// The branches of the text tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Charset {
    /// `├──`, `└──`, `│`: for a terminal.
    Unicode,
    /// `|--`, `` `-- ``, `|`: for files, pipes and old terminals.
    Ascii,
}

impl Charset {
    /// (branch, last branch, line past a branch, nothing past the last)
    fn parts(self) -> [&'static str; 4] {
        match self {
            Charset::Unicode => ["├── ", "└── ", "│   ", "    "],
            Charset::Ascii => ["|-- ", "`-- ", "|   ", "    "],
        }
    }
}

fn line(node: &Node) -> String {
    if node.detail.is_empty() {
        node.title()
    } else {
        format!("{}  {}", node.title(), node.detail)
    }
}

/// One line per node, children indented under their parent.
pub(crate) fn text(root: &Node, charset: Charset) -> String {
    let mut out = line(root) + "\n";
    children_text(root, "", charset, &mut out);
    out
}

fn children_text(node: &Node, prefix: &str, charset: Charset, out: &mut String) {
    let [branch, last_branch, through, past] = charset.parts();
    for (i, child) in node.children.iter().enumerate() {
        let last = i + 1 == node.children.len();
        let _ = writeln!(
            out,
            "{prefix}{}{}",
            if last { last_branch } else { branch },
            line(child)
        );
        let deeper = format!("{prefix}{}", if last { past } else { through });
        children_text(child, &deeper, charset, out);
    }
}

/// Nodes numbered depth-first from `n0`, each with its parent's number.
fn numbered(root: &Node) -> Vec<(usize, Option<usize>, &Node)> {
    fn walk<'a>(
        node: &'a Node,
        parent: Option<usize>,
        out: &mut Vec<(usize, Option<usize>, &'a Node)>,
    ) {
        let id = out.len();
        out.push((id, parent, node));
        for child in &node.children {
            walk(child, Some(id), out);
        }
    }
    let mut out = Vec::new();
    walk(root, None, &mut out);
    out
}

/// A Graphviz digraph: one box per node labelled with its title and detail, parent → child.
pub(super) fn dot(root: &Node) -> String {
    let escape = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let mut out = String::from(
        "digraph kratix {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n",
    );
    out.push_str(&graph_lines(
        root,
        escape,
        "\\n",
        |id, label| format!("  n{id} [label=\"{label}\"];"),
        |parent, id| format!("  n{parent} -> n{id};"),
    ));
    out.push_str("}\n");
    out
}

/// A Mermaid flowchart, left to right, with the same nodes and edges as [`dot`].
pub(super) fn mermaid(root: &Node) -> String {
    // Inside a quoted Mermaid label only `"` needs its entity; `<`, `>` and `&` are entities
    // too so that no name is read as markup.
    let escape = |s: &str| {
        s.replace('&', "#amp;")
            .replace('"', "#quot;")
            .replace('<', "#lt;")
            .replace('>', "#gt;")
    };
    let mut out = String::from("flowchart LR\n");
    out.push_str(&graph_lines(
        root,
        escape,
        "<br/>",
        |id, label| format!("  n{id}[\"{label}\"]"),
        |parent, id| format!("  n{parent} --> n{id}"),
    ));
    out
}

/// The lines of a graph of the tree, numbered depth-first: one per node (`node(id, label)`, the
/// label its escaped title and, after `line_break`, its escaped detail), then one per edge
/// (`edge(parent, id)`).
fn graph_lines(
    root: &Node,
    escape: impl Fn(&str) -> String,
    line_break: &str,
    node: impl Fn(usize, &str) -> String,
    edge: impl Fn(usize, usize) -> String,
) -> String {
    let mut out = String::new();
    let nodes = numbered(root);
    for (id, _, n) in &nodes {
        let mut label = escape(&n.title());
        if !n.detail.is_empty() {
            label = format!("{label}{line_break}{}", escape(&n.detail));
        }
        let _ = writeln!(out, "{}", node(*id, &label));
    }
    for (id, parent, _) in &nodes {
        if let Some(parent) = parent {
            let _ = writeln!(out, "{}", edge(*parent, *id));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(kind: &str, name: &str, detail: &str, children: Vec<Node>) -> Node {
        Node {
            kind: kind.into(),
            name: name.into(),
            detail: detail.into(),
            children,
        }
    }

    fn sample() -> Node {
        node(
            "Promise",
            "p",
            "Available",
            vec![
                node(
                    "PipelineRun",
                    "p-a-1",
                    "a configure Succeeded",
                    vec![node("", "d/f.yaml", "", vec![])],
                ),
                node("Work", "w \"q\"", "", vec![]),
            ],
        )
    }

    #[test]
    fn text_trees_in_both_charsets() {
        let cases = [
            (
                Charset::Ascii,
                "Promise/p  Available\n|-- PipelineRun/p-a-1  a configure Succeeded\n|   `-- d/f.yaml\n`-- Work/w \"q\"\n",
            ),
            (
                Charset::Unicode,
                "Promise/p  Available\n├── PipelineRun/p-a-1  a configure Succeeded\n│   └── d/f.yaml\n└── Work/w \"q\"\n",
            ),
        ];
        for (charset, want) in cases {
            assert_eq!(text(&sample(), charset), want, "{charset:?}");
        }
        assert_eq!(
            text(&node("Destination", "d", "", vec![]), Charset::Ascii),
            "Destination/d\n"
        );
    }

    #[test]
    fn dot_and_mermaid_have_one_node_per_object_and_escape_labels() {
        assert_eq!(
            dot(&sample()),
            "digraph kratix {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n  \
             n0 [label=\"Promise/p\\nAvailable\"];\n  \
             n1 [label=\"PipelineRun/p-a-1\\na configure Succeeded\"];\n  \
             n2 [label=\"d/f.yaml\"];\n  n3 [label=\"Work/w \\\"q\\\"\"];\n  \
             n0 -> n1;\n  n1 -> n2;\n  n0 -> n3;\n}\n"
        );
        assert_eq!(
            mermaid(&sample()),
            "flowchart LR\n  n0[\"Promise/p<br/>Available\"]\n  \
             n1[\"PipelineRun/p-a-1<br/>a configure Succeeded\"]\n  n2[\"d/f.yaml\"]\n  \
             n3[\"Work/w #quot;q#quot;\"]\n  n0 --> n1\n  n1 --> n2\n  n0 --> n3\n"
        );
    }
}
