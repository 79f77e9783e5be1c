// msgpackr loads this optionally and uses pure JavaScript when it throws.
throw new Error('msgpackr-extract is not installed (pure-JavaScript msgpackr is used)');
