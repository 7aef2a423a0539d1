// Comments start with `#` and `//` is floor division, as in Python. A `//` that
// reads as a comment of the older syntax is reported with the fix, before the
// parser sees the comment's words as code.
#pragma once

#include "ir/Diagnostics.h"

#include <string>
#include <vector>

namespace antlr4 {
class Token;
}

namespace dtnn::frontend {

// Reports each `//` that reads as a comment rather than a division: one that
// starts its line or follows no operand (a name, a number, `)` or `]`), or
// whose rest of the line does not start with an expression of names the
// file's code uses, ended by the line or by what may follow an expression
// (`// stem`, `// 35x35 wide`, `// [N, 8, 4, 4]`). `chars` is the file as the
// lexer read it, one element a character; `tokens` its tokens, ending with
// EOF. False when it reported any.
bool checkOldComments(const std::string &file, const std::u32string &chars,
                      const std::vector<antlr4::Token *> &tokens, DiagnosticEngine &diags);

} // namespace dtnn::frontend
