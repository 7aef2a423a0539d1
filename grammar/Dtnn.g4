// The .dtnn model language. A file holds imports, blocks, models and train
// sections. Newlines are not significant: statements are self-delimiting,
// and a `;` may end any statement. Comments start with `#`, as in Python.
grammar Dtnn;

// A source file: declarations in any order.
file : decl* EOF ;

// One top-level declaration.
decl : importDecl | blockDecl | modelDecl | trainDecl ;

// `import "std/resnet.dtnn"` makes the blocks of another file visible.
importDecl : IMPORT STRING ';'? ;

// A reusable parameterised block: `block basic(x, c: int, stride: int = 1) { ... }`.
blockDecl : BLOCK name=ID '(' paramList? ')' body ;

// The parameters of a block, separated by commas.
paramList : param (',' param)* ','? ;

// A block parameter, with an optional kind annotation and default value.
param : ident (':' kind=ID)? ('=' expr)? ;

// A name. The keywords that never start an expression or a binding (`var`, `block`, `model`,
// `train`, `import`, `repeat`) are names too wherever a name may stand: `let var = 3`,
// `for block in blocks`, `model = net(x)`.
ident : ID | VAR | BLOCK | MODEL | TRAIN | IMPORT | REPEAT ;

// A model: a function from typed inputs to typed outputs.
modelDecl : MODEL name=ID '(' inputList? ')' ARROW resultTypes body ;

// The inputs of a model, separated by commas.
inputList : input (',' input)* ','? ;

// A model input: `x: f32[N, 3, 32, 32]`.
input : ident ':' tensorType ;

// One result type, or several in parentheses.
resultTypes : tensorType | '(' tensorType (',' tensorType)* ')' ;

// An element type and its dimensions; a name stands for the symbolic batch.
tensorType : dtype=ID '[' (dim (',' dim)*)? ']' ;

// One dimension: a size, or the name of the symbolic batch dimension.
dim : INT | ID ;

// The train section of a model: defaults for the trainer.
trainDecl : TRAIN name=ID '{' setting* '}' ;

// One train setting: `optimizer = sgd(lr=0.01, momentum=0.9)`.
setting : ID '=' expr ';'? ;

// A statement list in braces.
body : '{' stmt* '}' ;

// Statements of block and model bodies.
stmt
  : LET pattern '=' expr ';'?          # letStmt
  | VAR ident '=' expr ';'?            # varStmt
  | ident '=' expr ';'?                # assignStmt
  | FOR pattern IN expr body           # forStmt
  | REPEAT expr body                   # repeatStmt
  | ifStmt                             # ifStmtAlt
  | RETURN expr (',' expr)* ';'?       # returnStmt
  ;

// A conditional statement on compile-time values. Else-if chains are a loop,
// not recursion, so a long chain cannot exhaust the parser's stack.
ifStmt : IF expr body (ELSE IF expr body)* (ELSE body)? ;

// A binding target: a name, or a tuple of targets to destructure.
pattern : ident | '(' pattern (',' pattern)* ')' ;

// Expressions, from the tightest binding to the loosest. `a ** b` is a power,
// right-associative and binding tighter than a unary minus, as in Python
// (`-2 ** 2` is -4); `/` divides exactly and `//` floors, as Python's do.
// Python's `is`, `is not`, `not`, `and` and `or` bind as in Python (`not a == b`
// is `not (a == b)`); `!`, `&&` and `||` are the same. `a |> f(b)` means
// `f(a, b)` and binds loosest of all.
expr
  : primary                                                # primaryExpr
  | expr '[' expr ']'                                      # indexExpr
  | <assoc=right> expr op='**' expr                        # powExpr
  | op=('-' | '!') expr                                    # unaryExpr
  | expr op=('*' | '/' | '//' | '%') expr                  # mulExpr
  | expr op=('+' | '-') expr                               # addExpr
  | expr op=('<' | '<=' | '>' | '>=' | '==' | '!=') expr   # cmpExpr
  | expr op=IS neg=NOT? expr                               # isExpr
  | op=NOT expr                                            # notExpr
  | expr op=('&&' | AND) expr                              # andExpr
  | expr op=('||' | OR) expr                               # orExpr
  | expr PIPE callee                                       # pipeExpr
  ;

// The right-hand side of a pipe: a layer or block, with optional arguments. `var` names the
// variance builtin where a call follows it (a statement starting `var NAME =` declares).
callee : ident ('(' argList? ')')? ;

// Operands of expressions.
primary
  : INT                                                    # intLit
  | FLOAT                                                  # floatLit
  | STRING                                                 # stringLit
  | (TRUE | FALSE)                                         # boolLit
  | NONE                                                   # noneLit
  | ident '(' argList? ')'                                  # callExpr
  | ident                                                  # nameExpr
  | '(' expr ')'                                           # parenExpr
  | '(' expr ',' (expr (',' expr)*)? ','? ')'              # tupleExpr
  | '[' (expr (',' expr)* ','?)? ']'                       # listExpr
  | ifExpr                                                 # ifExprAlt
  ;

// A conditional expression: `if cond { a } else if cond2 { b } else { c }`.
ifExpr : IF expr '{' expr '}' (ELSE IF expr '{' expr '}')* ELSE '{' expr '}' ;

// Call arguments, positional first, then named.
argList : arg (',' arg)* ','? ;

// One call argument: `expr` or `name = expr`.
arg : (ident '=')? expr ;

IMPORT : 'import' ;
BLOCK  : 'block' ;
MODEL  : 'model' ;
TRAIN  : 'train' ;
LET    : 'let' ;
VAR    : 'var' ;
FOR    : 'for' ;
IN     : 'in' ;
REPEAT : 'repeat' ;
IF     : 'if' ;
ELSE   : 'else' ;
RETURN : 'return' ;
TRUE   : 'true' | 'True' ;
FALSE  : 'false' | 'False' ;
NONE   : 'None' ;
IS     : 'is' ;
NOT    : 'not' ;
AND    : 'and' ;
OR     : 'or' ;
ARROW  : '->' ;
PIPE   : '|>' ;

ID    : [a-zA-Z_] [a-zA-Z_0-9]* ;
FLOAT : DIGITS '.' DIGITS? EXPONENT? | '.' DIGITS EXPONENT? | DIGITS EXPONENT ;
INT   : DIGITS ;
fragment DIGITS   : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;

STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"' ;
// A string missing its closing quote on the same line; reported by the front end.
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* ;

LINE_COMMENT  : '#' ~[\r\n]* -> skip ;
BLOCK_COMMENT : '/*' .*? '*/' -> skip ;
// A block comment that runs to the end of the file; reported by the front end.
UNTERMINATED_COMMENT : '/*' (~'*' | '*'+ ~[*/])* '*'* ;

WS : [ \t\r\n\f]+ -> skip ;

// Any other character; reported by the front end.
BAD_CHAR : . ;
