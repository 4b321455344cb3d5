//! Repository ids, revisions and file paths become URL path segments; each is checked here
//! before it is sent, so a bad one fails with its name rather than as a confusing 404.

use reqwest::Url;

use super::HubError;

const MAX_REPO_PART_LEN: usize = 96;
const MAX_REVISION_LEN: usize = 255;
const MAX_FILE_PATH_LEN: usize = 1024;

/// `owner/name` (or a legacy `name`), as segments.
pub(crate) fn repo_segments(repo: &str) -> Result<Vec<&str>, HubError> {
    let parts: Vec<&str> = repo.split('/').collect();
    let valid_part = |part: &&str| {
        !part.is_empty()
            && part.len() <= MAX_REPO_PART_LEN
            && part.starts_with(|c: char| c.is_ascii_alphanumeric())
            && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    };
    if parts.len() > 2 || !parts.iter().all(valid_part) {
        return Err(HubError::BadRepoId { repo: repo.to_string() });
    }
    Ok(parts)
}

/// A branch, tag or commit; one URL segment (a `/` in it is escaped, as the Hub expects).
pub(crate) fn check_revision(revision: &str) -> Result<(), HubError> {
    let bad = |reason| HubError::BadPath { what: "revision", value: revision.to_string(), reason };
    if revision.is_empty() || revision.len() > MAX_REVISION_LEN {
        return Err(bad("a revision has 1 to 255 characters"));
    }
    if revision.chars().any(char::is_control) || revision.split('/').any(|part| part == "..") {
        return Err(bad("a revision has no control characters and no '..'"));
    }
    Ok(())
}

/// A file's path inside a repository, as segments.
pub(crate) fn file_segments(path: &str) -> Result<Vec<&str>, HubError> {
    let bad = |reason| HubError::BadPath { what: "file path", value: path.to_string(), reason };
    if path.is_empty() || path.len() > MAX_FILE_PATH_LEN {
        return Err(bad("a file path has 1 to 1024 characters"));
    }
    let segments: Vec<&str> = path.split('/').collect();
    if segments.iter().any(|segment| segment.is_empty() || *segment == "." || *segment == "..") {
        return Err(bad("a file path is relative, without empty, '.' or '..' parts"));
    }
    if path.chars().any(|c| c.is_control() || c == '\\') {
        return Err(bad("a file path has no control characters or backslashes"));
    }
    Ok(segments)
}

/// `endpoint` with `segments` appended, each percent-encoded.
pub(crate) fn endpoint_url<'s>(endpoint: &Url, segments: impl IntoIterator<Item = &'s str>) -> Url {
    let mut url = endpoint.clone();
    url.path_segments_mut()
        .expect("the endpoint was checked to be a base URL")
        .pop_if_empty()
        .extend(segments);
    url
}

pub(crate) fn parse_endpoint(endpoint: &str) -> Result<Url, HubError> {
    let bad = |reason: String| HubError::BadEndpoint { endpoint: endpoint.to_string(), reason };
    let url = Url::parse(endpoint).map_err(|error| bad(error.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || url.cannot_be_a_base() {
        return Err(bad("not an http or https URL".to_string()));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repo_ids_are_one_or_two_safe_parts() {
        assert_eq!(repo_segments("bartowski/Llama-3.2-1B-Instruct-GGUF").unwrap().len(), 2);
        assert_eq!(repo_segments("gpt2").unwrap(), ["gpt2"]);
        for bad in ["", "a/b/c", "../x", "a/..", "a b/c", "owner/", "/name", "a/.hidden", "ü/x"] {
            assert!(repo_segments(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn file_paths_stay_inside_the_repository() {
        assert_eq!(file_segments("Q4_K_M/model-00001-of-00002.gguf").unwrap().len(), 2);
        for bad in ["", "/etc/passwd", "a/../../b", "./a", "a//b", "a\\b", "a\nb"] {
            assert!(file_segments(bad).is_err(), "{bad:?}");
        }
        assert!(check_revision("refs/pr/1").is_ok());
        assert!(check_revision("../main").is_err());
    }

    #[test]
    fn segments_are_escaped() {
        let endpoint = parse_endpoint("http://127.0.0.1:8080/mirror/").unwrap();
        let url = endpoint_url(&endpoint, ["api", "models", "refs/pr/1", "a b.gguf"]);
        assert_eq!(url.as_str(), "http://127.0.0.1:8080/mirror/api/models/refs%2Fpr%2F1/a%20b.gguf");
        assert!(parse_endpoint("ftp://example.com").is_err());
        assert!(parse_endpoint("not a url").is_err());
    }
}
