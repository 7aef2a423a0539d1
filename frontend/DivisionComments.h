// `//` starts a comment in .dtnn, so a Python user's integer division
// `channels(x) // 2` would silently compile as `channels(x)`. This check finds
// such a comment and makes it an error.
#pragma once

#include "ir/Diagnostics.h"

#include <string>
#include <vector>

namespace antlr4 {
class Token;
}

namespace dtnn::frontend {

// Reports each `//` comment that cuts an expression short: one that follows an
// operand (a name, a number, `)` or `]`) on its line, and whose text reads as
// the rest of that expression: it parses as one whole expression, and each
// name in it is a name the file's code uses (`// 2`, `// groups`; not `// 3a`,
// `// stem` or `// 35x35`). `chars` is the file as the lexer read it, one
// element a character; `tokens` its tokens, ending with EOF. False when it
// reported any.
bool checkDivisionComments(const std::string &file, const std::u32string &chars,
                           const std::vector<antlr4::Token *> &tokens, DiagnosticEngine &diags);

} // namespace dtnn::frontend
